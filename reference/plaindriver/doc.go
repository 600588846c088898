// Package plaindriver is drakit's second DRA driver: a kubelet plugin with
// plain, not GPU-shaped devices, which it hands to containers only through
// CDI environment variables and one read-only mount per device — no device
// nodes, no NVML, nothing of the node but its own state directory. It is
// certified by the same core features as the reference driver, and it can
// be run with a deliberate defect (Config.Defect) that the conformance kit
// must catch.
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
// refuses an unknown one with the list of known ones, and the driver logs
// the defect it runs with at start.
//
//   - extra-device: the first CDI device of a claim's spec also carries the
//     env and the mount of the node's device with the lowest index that the
//     claim was not allocated (it may be another claim's). A container of a
//     claim for dev-1 and dev-3 also has PLAIN_DEVICE_0=dev-0,
//     PLAIN_DEVICE_0_SERIAL and /var/run/plain/dev-0. The kit observes it in
//     the container (an environment naming a device the API server did not
//     allocate to the claim; a mount of it) and, with access to the node's
//     CDI directory, in the spec. A claim holding every device of the node
//     gets no extra device (there is none; logged), so Validate asks for at
//     least 2 devices.
//   - leave-cdi-spec: unprepare forgets the claim but does not remove its
//     spec (pluginharness.Config.KeepSpecOnUnprepare says yes to every
//     claim). Pods, claims and allocations behave correctly — the spec's
//     device IDs carry the claim UID, so no later container gets them — so
//     the kit observes it only on the node: after the pod (and its
//     generated claim) is gone, k8s.<driver>-claim_<claimUID>.json is still
//     in the CDI directory (drakit conformance --node-cdi-dir).
//   - duplicate-device-names: the pool carries a device N (index N, serial
//     PLN-<h>-N) named dev-0, so two devices are named dev-0. The apiserver
//     would reject such a slice (spec.devices[N].name: Duplicate value), but
//     the kubelet plugin's ResourceSlice controller refuses the pool before
//     sending it ("pool validation failed": found duplicate device "dev-0"
//     in pool "<node>") and does not retry it; the driver hands it the pool
//     again every 15 s, so that error is logged again each time (also after
//     the kit's start, in the last lines of the driver log). The kit
//     observes: the driver's pod runs and the plugin registers with the
//     kubelet, but no ResourceSlice of the driver exists for the node (the
//     driver neither updates nor removes a slice an earlier, correct run
//     left; reference/deploy ApplyPlain deletes those), so every claim for
//     the driver's DeviceClass stays unallocated and its pod Pending (the
//     scheduler finds no device of the class). ApplyPlain therefore waits
//     only for Ready pods with this defect. The devices stay valid otherwise
//     (the slice with N+1 entries fits the 128-device limit: Validate allows
//     at most 127 devices).
//
// # Errors
//
// HandleError logs recoverable background errors (kubeletplugin.ErrRecoverable:
// a pool the ResourceSlice controller refuses, a slice the apiserver
// rejects) and stops Run with any other error as cause.
package plaindriver
