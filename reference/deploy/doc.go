// Package deploy installs drakit's reference DRA drivers into a cluster:
// one deploy path for the family. Options names the driver (Kind: gpu,
// nic, cpu, tpu or plain) and its options; Objects renders the chart
// deployments/helm/drakit-driver for them with Helm's engine (the chart,
// embedded in the binary, is the one source of the manifests: what `helm
// install` renders is what deploy applies) and decodes every object
// strictly; Apply applies them and waits, Delete removes them.
//
// Each kind renders the namespace, service account, cluster role and
// binding with exactly a kubelet plugin's RBAC (the NIC driver's adds, for
// the claims' device status, patch on resourceclaims/status and
// associated-node:patch on resourceclaims/driver for its own driver name),
// a ValidatingAdmissionPolicy and its binding that let the driver's
// service account write only its driver's ResourceSlices of the node its
// pod runs on (the node name a pod-bound token carries), the driver
// DaemonSet and the kind's DeviceClasses: the GPU driver's <driver> (full
// GPUs, type "gpu" or none) and mig.<driver>; the NIC driver's <driver>
// (the PFs' bandwidth shares, type "pf") and vf.<driver>; the CPU driver's
// <driver>; the TPU driver's <driver> (chips) and subslice.<driver>; the
// plain driver's <driver>, and for its styles with more kinds of device
// partition.<driver> or shared.<driver> (plaindriver.DeviceClasses).
//
// The drivers run with least privilege (the chart's daemonset.yaml says
// why each setting and mount is there): not privileged, no privilege
// escalation, RuntimeDefault seccomp, a read-only root filesystem, uid 0
// with every capability dropped (the GPU driver keeps MKNOD); the kubelet
// plugin directories and the CDI directory are mounted writable, each
// kind's own host paths as it needs them (the GPU driver's root read-only
// but for the three directories dynamic MIG changes; the NIC driver's
// sysfs writable, VFs are created through it; the CPU driver's NUMA nodes
// and the TPU driver's sysfs and tpu-env read-only; the CPU and plain
// drivers' state directories). Options.Privileged renders a privileged GPU
// driver container instead: creating and destroying dynamic MIG devices
// reads the MIG config capability device, which a device cgroup (runc)
// denies to a container that is not privileged.
//
// Two kinds also run a one-replica controller that publishes ResourceSlices
// without a node name: the GPU driver's IMEX channel controller
// (Options.IMEXChannels) and the TPU driver's sub-slice controller. RBAC
// lets each write every ResourceSlice; its own ValidatingAdmissionPolicy
// limits its service account to its driver's slices without a node name,
// so that it can neither replace nor delete the slices the kubelet plugins
// publish for their nodes. TestIntegrationControllerSliceAdmission checks
// both on a running cluster, TestIntegrationDriverSliceAdmission the
// driver's policy and TestIntegrationNICStatusAuthorization the NIC
// driver's status writes.
//
// Options.Validate refuses an unknown kind, another kind's options set,
// what the driver itself would reject, and host paths that must not be
// mounted into the pod: unclean or relative paths, system directories (/,
// /etc, /usr, /var, /var/lib, ...: systemDirs) and anything below /usr,
// /proc, /sys, /dev and the other system trees, and host paths that
// overlap. It reports every problem, by field and flag of drakit driver.
// The chart refuses the same values (deployments/helm's test).
// DefaultOptions(kind) are the chart's defaults for the kind: as written,
// the chart deploys onto a node with the default paths (kubelet root
// /var/lib/kubelet, CDI specs in /var/run/cdi, the emulator rendered into
// /var/lib/drakit/emulator, the apiserver at 127.0.0.1:6443), e.g. a kind
// node. Each host path is mounted at the same path inside the driver pod
// (hostPath.path == mountPath), the contract in docs/architecture.md. The
// objects are named after the kind (drakit-driver in drakit-system,
// drakit-nic-driver in drakit-nic, drakit-cpu-driver in drakit-cpu,
// drakit-tpu-driver in drakit-tpu, drakit-plain-driver in drakit-plain),
// so that the drivers run side by side; a plain variant
// (Options.Variant) is drakit-plain-<variant> in a namespace of that name.
// Options.Node pins the DaemonSet to one node, for deploying once per node
// of a multi-node local cluster, each with its paths.
//
// Apply is create-or-update and idempotent; it applies the policies
// before the workloads they constrain. It returns once the DaemonSet is
// rolled out, its pods are Ready and every node with a Ready driver pod
// has a ResourceSlice of the driver (and the controller, where the kind
// has one, is available); on timeout its error carries the pods' status,
// their recent events and the last lines of their logs. Delete removes
// everything Apply created, waits for the driver pods to go and then
// deletes the policy and its binding and the driver's ResourceSlices (the
// kubelet would only wipe them 30 s after the plugin unregistered).
// Deleting what does not exist succeeds.
package deploy
