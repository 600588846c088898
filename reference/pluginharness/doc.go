// Package pluginharness is the kubelet-plugin plumbing drakit's reference
// drivers share (reference/driver, reference/plaindriver): the prepared-claim
// checkpoint, prepare and unprepare with their idempotency and conflict
// rules, the per-claim CDI specs, the kubelet plugin's start and
// registration, publishing the node's pool and the run loop. A driver
// implements Driver for one kind of device: what exists on the node (the
// pool it publishes), what prepare and unprepare do to the hardware, and
// which CDI container edits a prepared claim gets. Everything else is here,
// once.
//
// # What a driver implements
//
// Driver[D] has five methods. D is the driver's checkpointed record of one
// prepared device: a struct that embeds PreparedDevice (the allocation
// result the harness records: request, pool, device, admin access, CDI
// device IDs) and adds what the driver must remember to undo its prepare
// (the reference driver's MIG record; nothing for the plain driver, whose D
// is PreparedDevice itself). Its JSON encoding is part of the checkpoint.
//
//   - Discover is called once, by New, after the checkpoint is loaded and
//     unfinished prepares are undone. It returns the resources to publish:
//     one pool named after the node. The devices of that pool are the only
//     ones prepare accepts.
//   - Admit may refuse one allocation result (a device and whether it has
//     admin access) before anything is done for the claim.
//   - Prepare does to the hardware what the claim's devices need. It may
//     record what it creates in the claim's devices and call save to
//     checkpoint the claim as it stands; a driver that changes the hardware
//     sets Claim.Incomplete and saves before the first change, so that a
//     restart finds what to undo, and clears it when done (the harness
//     checkpoints the result). On error the harness undoes the claim.
//   - Edits returns the CDI container edits of a prepared claim, from its
//     checkpointed record alone: the spec's own edits and one entry per CDI
//     device. It is called again when a prepared claim is prepared again.
//   - Unprepare undoes what Prepare did, from the record. It must succeed
//     for what is already undone or was never done (it is also how a failed
//     or unfinished prepare is cleaned up) and should undo as much as it can
//     before it returns an error.
//
// # Claims and idempotency
//
// PrepareResourceClaims handles each claim on its own (one claim's error is
// that claim's result) under one lock. Allocation results of other drivers
// are ignored. A claim gets a per-claim error and no spec, and is not
// checkpointed, when it is not allocated, when its UID is not made of
// letters, digits and '-' (the UID names its spec file), or when a result
// names a device of another pool (unless the driver is a PoolAdmitter and
// AdmitPool admits it), a device the driver does not publish, a
// device the driver withdrew at run time (ErrDeviceWithdrawn), a device
// Admit refuses, or a device already prepared for another claim
// (unless either claim uses admin access, or the results are shares of a
// device that allows multiple allocations: those carry a share ID, which
// PreparedDevice records with the consumed capacity and the kubelet gets
// back).
//
// Prepare is idempotent: preparing a prepared claim with the same
// allocation writes the same spec again from the checkpoint and returns the
// same devices, without calling Driver.Prepare. A checkpointed claim that is
// incomplete, or prepared for another allocation, is undone first. A
// claim's spec is written before the claim is checkpointed as prepared.
//
// Unprepare is idempotent too: a claim that is not prepared (or unknown)
// succeeds. For a known claim Driver.Unprepare runs first; when it fails the
// claim stays checkpointed, marked incomplete, and the error is the claim's
// (the kubelet retries). Then the claim's spec is removed by its
// deterministic name, also for a claim the checkpoint does not know (a
// crash between writing a spec and checkpointing the claim leaves nothing
// behind), and the claim is forgotten.
//
// # Checkpoint
//
// The harness owns the checkpoint: <Config.CheckpointDir>/checkpoint.json,
// JSON with the driver's version string (Config.CheckpointVersion) and,
// with Config.Checksum, the hex SHA-256 of the claims' JSON; the claims by
// UID. It is written after every change, atomically (a temporary file in
// the same directory, fsync, rename, fsync of the directory), and a driver
// must not write it. A checkpoint that does not decode, has unknown fields,
// another version or a wrong checksum stops New with ErrCorruptCheckpoint
// naming the file; it is never discarded. At start New undoes every claim
// still marked incomplete (a restart in the middle of a prepare) through
// Driver.Unprepare, removes its spec and forgets it; the kubelet retries the
// prepare.
//
// # CDI
//
// One spec per claim in Config.CDIDir, k8s.<driver>-claim_<claimUID>.json,
// kind k8s.<driver>/claim, with one CDI device <claimUID>-<device> per
// device in Edits; every allocation result of the claim gets the ID
// k8s.<driver>/claim=<claimUID>-<device>. A claim without devices of the
// driver gets no spec.
//
// With Config.DeviceMetadata the kubelet plugin helper also writes device
// metadata (KEP-5304): per request of a prepared claim a metadata file
// below <PluginDir>/dra-device-metadata (metadata.resource.k8s.io v1beta1,
// then v1alpha1) and a spec <driver>_metadata_<claimUID>_<request>.json in
// CDIDir that bind-mounts it into the containers using the request; the
// request's first device gets its CDI device ID. Prepare gives every
// device of the node's pool the attributes the pool publishes for it.
//
// # Running
//
// Run checks that the kubelet's registrar directory exists, creates the
// plugin directory, creates the plugin (New), starts the kubelet plugin
// helper (registration socket <RegistrarDir>/<driver>-reg.sock, DRA socket
// <PluginDir>/dra.sock: Sockets; health service off unless Config.Health),
// publishes the pool, logs "Driver running" and serves until ctx ends (it
// returns nil) or HandleError meets an error that is not
// kubeletplugin.ErrRecoverable (Run returns it). With Config.Republish it
// hands the pool to the ResourceSlice controller again at that interval.
// With Config.HTTPEndpoint (a loopback host:port only, CheckHTTPEndpoint)
// it serves, from before the plugin starts, /metrics (Prometheus text:
// drakit_dra_plugin_requests_total and _request_duration_seconds of the
// kubelet's prepare and unprepare calls by operation and result,
// _claims_total by result, _published_devices, and the Go and process
// collectors; counted by a gRPC interceptor of the kubelet plugin helper)
// and /healthz: "ok" once the kubelet's last NotifyRegistrationStatus
// registered the plugin and the DRA socket accepts a connection, 503 with
// the reason otherwise.
//
// # Pools that change
//
// A driver whose devices change at run time (a device's taints, hardware
// that vanished and came back) calls Plugin.Update with the whole new pool:
// Serve hands it to the kubelet plugin helper's PublishResources at once
// (the ResourceSlice controller updates the slices and bumps the pool
// generation when more than one slice changes), and prepare refuses the
// devices it withdrew with ErrDeviceWithdrawn until an Update puts them
// back. Drivers that never call Update publish once, as before. Health
// reporting is the served plugin's: with Config.Health the kubelet calls its
// WatchHealthStatus; the harness's own Plugin does not support it
// (kubeletplugin.ErrHealthNotSupported), so a driver that reports health
// wraps the Plugin and implements it. Serve does the same for
// a driver whose plugin wraps the harness's (its newPlugin calls New). What a driver checks
// before (its configuration, socket paths not longer than unixsocket.MaxSocketPath)
// and its own directories stay in the driver; the checks every driver makes
// alike are here: CheckNames (the driver name a DNS subdomain of at most 63
// characters, the node name required and usable as a pool name),
// CheckPaths (absolute paths, or empty where derived), CheckSockets (with
// internal/unixsocket's CheckSocketPath: a socket path, its length and the
// limit, the rule the interposer applies to its sockets too) and
// EffectivePluginDir (/var/lib/kubelet/plugins/<driver> unless given).
// Their errors name the field and are not classified: each driver wraps
// them in its own ErrInvalidConfig.
//
// # Testing
//
// The package's tests hold this contract against a fake Driver. A driver's
// tests check only what it adds (its devices, its edits, what it does to
// the hardware) through the same Plugin; harnesstest is the kubelet's side
// for them: claims, prepare and unprepare calls, the run loop, the sockets.
package pluginharness
