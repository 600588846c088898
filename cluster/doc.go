// Package cluster runs drakit's local test cluster: a real Kubernetes
// v1.37.2 (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// Config.Nodes nodes, each a kubelet with its own containerd) as plain
// processes on 127.0.0.0/8, with no container registry, no CNI plugin and no
// traffic beyond 127.0.0.0/8.
// Pods must use hostNetwork and locally imported images (imagePullPolicy
// Never). The recipe is docs local-cluster.md §18; the component binaries come
// from scripts/build-components.sh (Config.ComponentsDir).
//
// Contracts:
//
//   - Up is idempotent. It generates the PKI in Go, starts every component
//     that is not already running, in stages that start together (etcd and
//     every node's containerd, which then imports every *.tar of
//     Config.ImagesDir → the apiserver and every node's kubelet → the
//     controller-manager and scheduler), waits for each readiness endpoint
//     and then for every node's Node to be Ready without the not-ready taint
//     and for the default ServiceAccount. A component that exits while Up waits for it is
//     reported with the tail of its log. Up needs root.
//   - Up and Down act only on a run dir that Up created or claimed: Up
//     creates a missing RunDir or claims an empty one by writing MarkerFile
//     (a JSON identity naming that very path); a non-empty directory without
//     it, a marker naming another path (a copied run dir), a symlink, a
//     file, or a directory others can write are refused with ErrNotOwned
//     before anything is touched. Down without a RunDir does nothing.
//   - Everything Up creates lives under Config.RunDir, except what the
//     kubelet and the runc shim create at fixed host paths, the kubelet's
//     cgroups (Config.CgroupRoot in every hierarchy) and the mount points of
//     the kubelet root dirs (Config.KubeletRootBase). Up records which of
//     those host paths (the cgroup roots among them) did not exist before it
//     (a ledger in RunDir), so Down removes only what the cluster created; a
//     cgroup root that exists before the first Up is refused (ErrNotOwned),
//     and so is a kubelet root dir mount point where something else is
//     mounted or that holds files.
//   - The cluster is authenticated as a kubeadm cluster is: etcd speaks TLS
//     with client certificates of its own CA (the apiserver is its only
//     client; plain HTTP serves only /health and /metrics); the kubelet
//     takes client certificates of the cluster CA or tokens (TokenReview),
//     authorizes every request by a SubjectAccessReview and has anonymous
//     auth off, serving a certificate the apiserver verifies; the
//     controller-manager and scheduler delegate authentication and
//     authorization to the apiserver.
//   - The scheduler reads a KubeSchedulerConfiguration (RunDir/scheduler)
//     whose DynamicResources bindingTimeout is SchedulerBindingTimeout (30s,
//     not 10 minutes), so that a conformance run sees a KEP-5007 "device
//     binding timeout"; it is left out when a binding-condition gate is off.
//   - The kubelet runs in a private mount namespace (unshare) where the four
//     sysctl files its setupKernelTunables wants are bind-mounted over
//     /proc/sys, so no host sysctl is ever written. Its root dir is its store
//     in RunDir (<node dir>/kubelet/root) bind-mounted at
//     <KubeletRootBase>/k<i>: short, so that a driver's per-pod DRA socket
//     (PerPodDRASocket) fits the unix socket limit for driver names of
//     DriverNameReserve bytes whatever RunDir is (Validate checks it;
//     MaxDriverName and Status give the exact room). The mount is shared, in
//     a peer group of its own, so the volumes the kubelet mounts there
//     (service account tokens) propagate to the host namespace where
//     containerd reads them, and nowhere else.
//   - Down deletes every pod first (pods with resource claims first, while the
//     DRA driver pods can still unprepare them), stops the components in
//     reverse order by PID (SIGTERM, then SIGKILL after Config.StopTimeout),
//     kills leftover shims and container processes it can prove it started
//     (the cluster's shim binary with -address exactly the cluster's
//     containerd socket; processes in a cgroup root the ledger records),
//     unmounts what Up recorded in its mount ledger and what the kubelet and
//     containerd mounted below their own dirs (KubeletRootDir, the containerd
//     dir), removes the host paths of the ledger (its cgroups depth-first),
//     and finally removes RunDir — unless something else is mounted below it,
//     which it leaves, with RunDir, and reports. Only caches (ComponentsDir,
//     ImagesDir) remain. Down is idempotent.
//   - Processes are only ever signalled by PID, after checking that the PID
//     still names the process that was started (its start time).
//   - Nodes: node i is named Config.NodeName plus i-1 and its kubelet serves
//     on that address; it has its own containerd (a kubelet kills the pods of
//     its runtime it does not own, so nodes cannot share one), cgroup root,
//     kubelet identity and serving certificate, and its own dirs: node 1's
//     are the single-node layout in RunDir, node i's the same layout in
//     <RunDir>/nodes/<i>, its kubelet root dir <KubeletRootBase>/k<i>
//     (NodePaths). Every node's containerd imports
//     ImagesDir. Up records the node count in RunDir and refuses another one
//     over the same RunDir; Down and Status act on the recorded nodes.
//
// The paths other parts of the kit need are KubeconfigPath, CDIDir (the dir
// containerd reads CDI specs from and a driver writes them to),
// KubeletRootDir (plugin sockets under <root>/plugins and
// <root>/plugins_registry) and EmulatorRoot, all node 1's; NodePaths has
// every node's.
package cluster
