// Package cluster runs drakit's local test cluster: a real single-node
// Kubernetes v1.37.2 (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd and a kubelet) as plain processes on 127.0.0.1,
// with no container registry, no CNI plugin and no traffic beyond 127.0.0.0/8.
// Pods must use hostNetwork and locally imported images (imagePullPolicy
// Never). The recipe is docs local-cluster.md §18; the component binaries come
// from scripts/build-components.sh (Config.ComponentsDir).
//
// Contracts:
//
//   - Up is idempotent. It generates the PKI in Go, starts every component
//     that is not already running (etcd → apiserver → controller-manager →
//     scheduler → containerd, importing every *.tar of Config.ImagesDir →
//     kubelet), waits for each readiness endpoint and then for Node
//     Config.NodeName to be Ready without the not-ready taint and for the
//     default ServiceAccount. A component that exits while Up waits for it is
//     reported with the tail of its log. Up needs root.
//   - Everything Up creates lives under Config.RunDir, except what the
//     kubelet and the runc shim create at fixed host paths and the kubelet's
//     cgroups (Config.CgroupRoot in every hierarchy). Up records which of those
//     host paths did not exist before it (a ledger in RunDir), so Down removes
//     only what the cluster created.
//   - The kubelet runs in a private mount namespace (unshare) where the four
//     sysctl files its setupKernelTunables wants are bind-mounted over
//     /proc/sys, so no host sysctl is ever written. Its root dir is a shared
//     bind mount, so the volumes it mounts there (service account tokens)
//     propagate to the host namespace where containerd reads them.
//   - Down deletes every pod first (pods with resource claims first, while the
//     DRA driver pods can still unprepare them), stops the components in
//     reverse order by PID (SIGTERM, then SIGKILL after Config.StopTimeout),
//     kills leftover shims and container processes it can prove it started
//     (shim command lines naming RunDir; processes in Config.CgroupRoot),
//     unmounts everything under RunDir, removes its cgroups depth-first and
//     the host paths of the ledger, and finally removes RunDir. Only caches
//     (ComponentsDir, ImagesDir) remain. Down is idempotent.
//   - Processes are only ever signalled by PID, after checking that the PID
//     still names the process that was started (its start time).
//
// The paths other parts of the kit need are KubeconfigPath, CDIDir (the dir
// containerd reads CDI specs from and a driver writes them to),
// KubeletRootDir (plugin sockets under <root>/plugins and
// <root>/plugins_registry) and EmulatorRoot.
package cluster
