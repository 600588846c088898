// Package plaindriver is drakit's second DRA driver: a kubelet plugin with
// plain, not GPU-shaped devices, which it hands to containers only through
// CDI — by default environment variables and one read-only mount per device,
// no NVML, nothing of the node but its own state directory. It is the
// subject of the kit's verdict matrix (Matrix, scripts/verdict-matrix.sh):
// run in one of several correct styles (Config.Style) it must be certified
// Conformant, run with a deliberate defect (Config.Defect) Not conformant
// with a finding that names the defect. Variants run side by side under
// their own driver names (VariantDriverName).
//
// # Published resources
//
// One pool named after the node, in one ResourceSlice, with Config.Devices
// devices dev-0 … dev-<N-1>. Attributes (in the driver's domain, so CEL
// reads device.attributes["plain.drakit.dev"].index): index (int, i of
// dev-<i>) and serial (string PLN-<h>-<i>, h the first 8 hex digits of the
// SHA-256 of the node name: stable across restarts, different per node).
// Capacity: size, 1Gi. The DeviceClass plain.drakit.dev (device.driver ==
// "plain.drakit.dev") is created by the deployment (reference/deploy,
// PlainObjects), not by the driver, as for the reference driver.
//
// # Styles
//
// The default, mounts, is described above and below. The others change
// what is published and what a CDI device carries:
//
//   - env-only: only the two variables per device, no mount (an
//     upstream-style example driver).
//   - device-nodes: the variables and a device node /dev/plain/<device>,
//     made from the host's /dev/null (character device 1:3, written into
//     the spec with its type, major and minor), no mount.
//   - partitions (KEP-4815): every device dev-<i> has a counter set
//     dev-<i>-counters of 4 slots, in a slice of its own before the
//     devices' slice (a slice holds either). The pool has dev-<i> (kind
//     whole, consuming all 4), its halves dev-<i>-half-<0..1> (2 slots) and
//     quarters dev-<i>-quarter-<0..3> (1 slot), partitions with the string
//     attributes profile (half, quarter) and parentSerial (the serial of
//     dev-<i>). Every device has the attribute kind (whole or partition), a
//     size of 1Gi times its share of the slots, and an index of its own
//     (the partitions' count on after the whole devices'); each gets the
//     variables and its mount. At most 9 devices (64 in a slice whose
//     devices consume counters). The deployment adds the DeviceClass
//     partition.<driver> (DeviceClasses).
//   - consumable-capacity (KEP-5075): beside dev-<i> (kind whole), the
//     shared devices shared-0 and shared-1 (kind shared) allow multiple
//     allocations of their capacity bandwidth, 8Gi with a request policy of
//     1Gi by default in steps of 1Gi from 1Gi, and have no size (a capacity
//     without a policy would be consumed whole by each share). The
//     deployment adds the DeviceClass shared.<driver>.
//   - strict-config: the variables only, and the claim's opaque configs of
//     this driver decoded strictly (DeviceConfig: apiVersion <driver>/v1,
//     kind DeviceConfig, a label of 1 to 63 printable ASCII characters,
//     nothing else): a config that does not decode is the claim's error;
//     one that does adds PLAIN_DEVICE_<index>_LABEL=<label> to every device
//     of the requests it names (all without names; a request covers its
//     subrequests), a later config winning. Every other style ignores
//     opaque configs.
//
// At start the driver writes <StateDir>/devices/<device>/serial (the serial
// and a newline, mode 0644 in 0755 directories) for every device.
//
// # Prepare and unprepare
//
// The kubelet plugin's plumbing is reference/pluginharness's, whose
// contract holds here: per-claim errors, idempotency, conflicts, the
// checkpoint and the CDI spec names. The driver adds what its devices
// inject and has nothing to do on the node at prepare or unprepare.
//
// PrepareResourceClaims writes one CDI spec per claim into Config.CDIDir,
// k8s.<driver>-claim_<claimUID>.json, kind k8s.<driver>/claim, with one CDI
// device <claimUID>-<device> per allocated device of this driver (once when
// several requests of the claim got the same device), and returns its ID
// k8s.<driver>/claim=<claimUID>-<device> for every allocation result. A CDI
// device has only container edits of its own, no spec-wide ones:
//
//	env    PLAIN_DEVICE_<index>=<device name>
//	env    PLAIN_DEVICE_<index>_SERIAL=<serial>
//	mount  <StateDir>/devices/<device> at /var/run/plain/<device>,
//	       options ro, nosuid, nodev, noexec, bind
//
// so a container of a claim for dev-1 and dev-3 on node n has exactly
// PLAIN_DEVICE_1=dev-1, PLAIN_DEVICE_1_SERIAL=PLN-<h>-1, PLAIN_DEVICE_3=dev-3,
// PLAIN_DEVICE_3_SERIAL=PLN-<h>-3 and the read-only directories
// /var/run/plain/dev-1 and /var/run/plain/dev-3, each holding a file serial
// with that device's serial. Opaque configuration is ignored, as are
// results of other drivers. A claim that is not allocated, or whose results
// name a device of another pool, a device not on this node, or a device
// already prepared for another claim (unless either has admin access) gets
// a per-claim error and no spec, as does a claim UID that is not made of
// letters, digits and '-' (the UID names the spec file).
//
// Prepared claims are checkpointed in <StateDir>/checkpoint.json (JSON with
// the version plain.drakit.dev/checkpoint/v1 and no checksum, written
// atomically) after every change, so a driver restarted between prepare and
// unprepare unprepares correctly. A checkpoint that does not decode, has
// unknown fields or another version stops the driver with
// ErrCorruptCheckpoint naming the file.
//
// Both calls are idempotent: preparing a prepared claim rewrites the same
// spec and returns the same devices; unpreparing a claim that is not
// prepared succeeds. Unprepare removes the claim's spec by its
// deterministic name, also when the checkpoint does not know the claim (a
// crash between writing the spec and the checkpoint), then forgets it.
//
// # Defects
//
// Each defect exists only to be caught by the conformance kit; Validate
// refuses an unknown one with the list of known ones, ValidateStyle one the
// style cannot have, and the driver logs the defect it runs with at start.
// Errors a defect gives the kubelet end in "(defect <name>)". Matrix says,
// per defect, the kit's tag filter and the finding it must report.
//
// In the container (the kit's env, mounts and deviceNodes observers, and
// with the node's directories the CDI contract):
//
//   - extra-device: the first CDI device of a claim's spec also carries the
//     edits of the node's device (of the same kind) with the lowest index
//     that the claim was not allocated (it may be another claim's). A
//     container of a claim for dev-1 and dev-3 also has PLAIN_DEVICE_0=dev-0,
//     PLAIN_DEVICE_0_SERIAL and /var/run/plain/dev-0: an environment naming
//     a device the API server did not allocate to the claim. A claim holding
//     every device of the node gets no extra device (logged), so
//     ValidateDevices asks for at least 2 devices.
//   - wrong-device: each CDI device carries the edits of that unallocated
//     device instead of its own: the container has PLAIN_DEVICE_0=dev-0 and
//     not PLAIN_DEVICE_1 for a claim for dev-1 — seen in the container
//     alone, without node access.
//   - missing-env: no PLAIN_DEVICE_<index> variable (the serial's stays).
//   - env-wrong-value: PLAIN_DEVICE_<index>=dev<index>, not dev-<index>.
//   - mount-missing (style mounts): no mount of the device's directory.
//   - mount-writable (style mounts): the directory mounted without ro.
//   - device-node-missing (style device-nodes): no device node.
//   - extra-device-node (style device-nodes): the first CDI device also
//     creates the unallocated device's node, /dev/plain/dev-0.
//   - no-cdi-edits: prepare succeeds and returns the devices without CDI
//     device IDs (the spec is written): the container gets nothing; the
//     kubelet's record shows devices prepared without a CDI device.
//   - unresolvable-cdi-device: prepare returns CDI device IDs with the
//     suffix -unknown, which no spec defines: the runtime cannot create the
//     container, the pod never runs.
//   - config-ignored (style strict-config): configs are decoded, strictly,
//     but their label never reaches the container.
//
// In the API server (the kit's lint rules and the scheduler):
//
//   - duplicate-device-names: the pool carries a device N (index N, serial
//     PLN-<h>-N) named dev-0, so two devices are named dev-0. The apiserver
//     would reject such a slice (spec.devices[N].name: Duplicate value), but
//     the kubelet plugin's ResourceSlice controller refuses the pool before
//     sending it ("pool validation failed": found duplicate device "dev-0"
//     in pool "<node>") and does not retry it; the driver hands it the pool
//     again every 15 s, so that error is logged again each time. The kit
//     observes: the driver's pod runs and the plugin registers with the
//     kubelet, but no ResourceSlice of the driver exists for the node (the
//     driver neither updates nor removes a slice an earlier, correct run
//     left; reference/deploy ApplyPlain deletes those), so every claim for
//     the driver's DeviceClass stays unallocated and its pod Pending.
//     ApplyPlain therefore waits only for Ready pods with this defect. Not
//     with the styles of several slices or kinds.
//   - duplicate-identity: dev-1 publishes dev-0's serial, the identity the
//     declaration names (lint rule identity).
//   - attribute-type: every device publishes the standard attribute
//     resource.kubernetes.io/numaNode as the string "0", not an int (lint
//     rule standard-attributes).
//   - counters-overcommitted (style partitions): each device's last
//     quarter consumes 5 of the counter set's 4 slots: it can never be
//     allocated (lint rule counters).
//   - counters-underconsumed (style partitions): the whole device consumes
//     2 of its 4 slots, so that the scheduler allocates it beside a
//     quarter of it, which the kit expects to stay pending.
//
// In prepare and unprepare (the kit's pods, and its driver-contract
// scenarios: unprepare, idempotency, restart):
//
//   - prepare-fails: every claim gets a per-claim error; no pod runs.
//   - prepare-slow: every prepare waits PrepareDelay (60 s), longer than the
//     kubelet's 45 s for a NodePrepareResources call, and fails when the
//     call's context ends first: no pod runs.
//   - shares-refused (style consumable-capacity): a result with a share ID
//     is the claim's error: pods of shared devices never run.
//   - admin-access-refused: a result with admin access is the claim's
//     error (Admit): an admin-access pod never runs.
//   - not-idempotent: preparing a prepared claim again is the claim's
//     error.
//   - unprepare-fails: every unprepare fails and keeps the claim prepared,
//     its spec in the CDI directory: the device stays taken, so a later
//     claim for it fails to prepare (already prepared for another claim).
//   - leave-cdi-spec: unprepare forgets the claim but does not remove its
//     spec (pluginharness.Config.KeepSpecOnUnprepare says yes to every
//     claim). Pods, claims and allocations behave correctly — the spec's
//     device IDs carry the claim UID, so no later container gets them — so
//     the kit observes it only on the node: after the pod (and its
//     generated claim) is gone, k8s.<driver>-claim_<claimUID>.json is still
//     in the CDI directory (drakit conformance --node-cdi-dir).
//   - unprepare-keeps-device: unprepare succeeds and removes the spec, but
//     the driver keeps the claim's devices until it restarts: every later
//     claim for one of them gets a per-claim error ("still held").
//   - state-lost-on-restart: the driver deletes its checkpoint at start and
//     unprepare does nothing for a claim it does not know: a claim prepared
//     before a restart keeps its spec in the CDI directory after its pod
//     is gone.
//
// # Errors
//
// HandleError logs recoverable background errors (kubeletplugin.ErrRecoverable:
// a pool the ResourceSlice controller refuses, a slice the apiserver
// rejects) and stops Run with any other error as cause.
package plaindriver
