// Package deploy installs drakit's reference DRA driver into a cluster: the
// plain manifests in manifests/ (namespace drakit-system, service account,
// cluster role and binding with exactly a kubelet plugin's RBAC, a
// ValidatingAdmissionPolicy and its binding, the driver DaemonSet, the
// DeviceClasses), embedded and rendered for a node's paths. Two
// DeviceClasses: <driver> selects the driver's full GPUs (devices whose type
// attribute is "gpu", or that have none), mig.<driver> its MIG devices (type
// "mig").
//
// The driver runs with least privilege (manifests/daemonset.yaml says why
// each setting and mount is there): not privileged, no privilege
// escalation, RuntimeDefault seccomp, a read-only root filesystem, uid 0
// with every capability dropped but MKNOD; the kubelet plugin directories
// and the CDI directory are mounted writable, the driver root read-only
// except for the three directories dynamic MIG changes (the NVML state, the
// capability nodes and the capability files). Options.Privileged renders a
// privileged container instead: creating and destroying dynamic MIG devices
// reads the MIG config capability device, which a device cgroup (runc)
// denies to a container that is not privileged. The policy lets the
// driver's service account create, update and delete only ResourceSlices of
// its driver whose nodeName is the node of its pod (the node name a
// pod-bound token carries); nobody else is matched.
//
// Options.Validate refuses host paths that must not be mounted into the
// pod: unclean or relative paths, system directories (/, /etc, /usr, /var,
// /var/lib, ...: systemDirs) and anything below /usr, /proc, /sys, /dev and
// the other system trees, and host paths that overlap. It reports every
// problem, by field and flag of drakit driver.
//
// The manifests are the documentation: as written they deploy onto a node
// with the default paths (kubelet root /var/lib/kubelet, CDI specs in
// /var/run/cdi, the emulator rendered into /var/lib/drakit/emulator, the
// apiserver at 127.0.0.1:6443), e.g. a kind node. Objects decodes them
// strictly and substitutes Options: the driver name (DeviceClass name and
// selector, driver flag, plugin directory, the policy's driver), the image,
// every host path and Privileged.
// Each host path is mounted at the same path inside the driver pod
// (hostPath.path == mountPath), the contract in docs/architecture.md.
//
// Apply is create-or-update and idempotent; it applies the policy before the
// DaemonSet. It returns once the DaemonSet is rolled out, its pods are Ready
// and every node with a Ready driver pod has a ResourceSlice of the driver;
// on timeout its error carries the pods' status, their recent events and
// the last lines of their logs. Delete removes everything Apply created,
// waits for the driver pods to go and then deletes the policy and its
// binding and the driver's ResourceSlices (the kubelet would only wipe them
// 30 s after the plugin unregistered). Deleting what does not exist succeeds.
//
// # The plain driver
//
// PlainObjects, ApplyPlain and DeletePlain do the same for drakit's plain
// driver (reference/plaindriver) from manifests/plain, in namespace
// drakit-plain under the name drakit-plain-driver, so that it runs beside
// the reference driver and is deleted without touching it. One DeviceClass,
// <driver> (device.driver == "<driver>"). Its pod has no capability at all
// (no device nodes, no driver root): it mounts only the kubelet plugin
// directories, the CDI directory and its state directory (PlainOptions
// StateDir, validated like the other host paths), all writable because the
// driver writes each. Its admission policy is the reference driver's for its
// own service account and driver name. PlainOptions.Defect deploys one of the
// driver's deliberate defects; with duplicate-device-names, which publishes
// no ResourceSlice by design, ApplyPlain waits for Ready pods only and then
// deletes the driver's slices that an earlier run left.
//
// # The NIC driver
//
// NICObjects, ApplyNIC and DeleteNIC do the same for drakit's NIC driver
// (reference/nicdriver) from manifests/nic, in namespace drakit-nic under
// the name drakit-nic-driver, from the reference driver's image (command
// /usr/bin/drakit-nic-driver). Two DeviceClasses: <driver> (type "pf", the
// PFs' bandwidth shares) and vf.<driver> (type "vf"). Its pod has no
// capability; it mounts the kubelet plugin directories, the CDI directory
// and <HostRoot>/sys (the emulator's sysfs, writable: VFs are created
// through sriov_numvfs). Its cluster role adds, for the claims' device
// status, patch on resourceclaims/status and associated-node:patch on
// resourceclaims/driver for its own driver name only (rendered from
// NICOptions.DriverName); TestIntegrationNICStatusAuthorization checks on
// a running cluster that the API server lets its pod-bound service account
// write and remove only its own entries of claims allocated on its node.
// Its admission policy is the reference driver's for its own service
// account and driver name.
//
// # Cluster-level controllers
//
// Two deployments also run a one-replica controller that publishes
// ResourceSlices without a node name: the IMEX channel controller
// (Options.IMEXChannels, imex.go) and the TPU sub-slice controller
// (tpu.go). RBAC lets each write every ResourceSlice; its own
// ValidatingAdmissionPolicy limits its service account to its driver's
// slices without a node name, so that it can neither replace nor delete
// the slices the kubelet plugins publish for their nodes. Both policies
// are rendered from one manifest, after the controller's service account
// (controllerpolicy.go).
// TestIntegrationControllerSliceAdmission checks both on a running
// cluster.
//
// # One implementation
//
// The three deployments differ only where their drivers do: the options
// every one has (name, image, kubelet root, CDI directory, apiserver,
// timeout) are checked alike, every one has the DriverObjects (embedded in
// Manifests, PlainManifests and NICManifests) and is rendered, applied,
// waited for and deleted by the same code (workload.go, apply.go); each
// driver's file adds its own options, device classes, flags and host
// paths.
package deploy
