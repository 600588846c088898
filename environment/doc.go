// Package environment is the kit's environment lifecycle as
// sigs.k8s.io/e2e-framework pieces: cluster providers implementing
// types.E2EClusterProvider (and E2EClusterProviderWithImageLoader), and the
// setup and finish steps as env.Funcs that an e2e-framework suite
// (env.New().Setup(e.Setup()...).Finish(e.Finish()...) in a TestMain) and
// drakit's command line (Environment.Run, Up, Down: no testing.M) both run.
//
// Contracts:
//
//   - Providers (NewProvider): "local" is drakit's own process cluster
//     (package cluster): Create is cluster up with Config.Nodes nodes that
//     imports Config.ImagesDir, GetKubeconfig its kubeconfig, ExportLogs
//     copies the run dir's logs (node i > 1's into node-<i>/), Destroy is
//     cluster down, LoadImageArchive is images import (skipped for an
//     archive Up imported and that has not changed since). "existing" is a
//     cluster given by a kubeconfig, a context in it and a request timeout
//     (kubectl's --kubeconfig, --context, --request-timeout): Create only
//     checks that its API server answers; Destroy and ExportLogs never
//     touch it. "kind" (Kind) is
//     package environment/kind's provider with what the lifecycle needs:
//     it renders every node itself, runs "drakit" in a node as the drakit
//     render installed there (/opt/drakit/bin/drakit), and its NodeLayout
//     has the kind node's paths (the reference driver's defaults), the host
//     directories mounted at the emulator root, CDI dir and kubelet root
//     dir (Node.HostEmulatorRoot, HostCDIDir, HostKubeletRootDir: what the
//     kit reads) and the control plane's address on
//     the kind network (Node.APIServerHost/Port: the drivers' and probe
//     pods' API server). A new provider is one entry of the providers map
//     in providers.go.
//   - Node access is the structural interface NodeAccess: the node names and
//     running a command on a node as root, in the node's own file system (the
//     host for local, the node container for kind); argv[0] "drakit" is the
//     drakit binary the provider has for that node. A provider without it
//     (existing) gets no emulated hardware and no driver deployment. Where a
//     node keeps the kubelet root, the CDI dir, the emulator root, the NVML
//     shim, driver state and logs comes from the optional NodeLayout; without
//     it every node has DefaultNode's (the kubelet's defaults and
//     /var/lib/drakit/emulator, where kind/cluster.yaml mounts it).
//   - A provider that installs what render needs in its nodes first (kind)
//     implements EmulatorRenderer and renders each node itself.
//   - Setup, in order: create or reuse the cluster (Recreate destroys
//     whatever is left of it first), render the emulated hardware on every node (drakit emulator
//     render; every node of a multi-node cluster seeds its UUIDs with its
//     name), start the emulator's sriov_numvfs watcher on every node (drakit
//     emulator watch --detach, its PID file beside the emulator root, its log
//     in the node's log dir), load the image archives, deploy the drivers
//     (reference/deploy: one DaemonSet for every node where all nodes have
//     the same paths, else one pinned to each node). Up stops at the first
//     failing step.
//   - Finish, in order, every step run whatever failed before (errors
//     joined): stop every node's watcher, export the cluster's logs to
//     <ArtifactsDir>/logs, tear the cluster down. Run tears down only a
//     cluster its own setup created (a cluster found running is reused and
//     left); Down tears down whatever cluster the provider names; Keep never.
//   - The provider is stored in the context under
//     types.ClusterNameContextKey(Config.ClusterName), as envfuncs does, so
//     envfuncs' helpers work on it too.
package environment
