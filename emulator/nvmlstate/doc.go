// Package nvmlstate defines the NVML state file: the emulated GPUs as the
// emulator's "kernel driver" exposes them to the NVML shim (libnvidia-ml.so.1,
// written in C under emulator/nvml/shim).
//
// The emulator renders the file at <root>/run/drakit-emulator/nvml.state; the
// shim reads it on nvmlInit. Inside a container the reference driver's CDI spec
// mounts its directory at /run/drakit-emulator. Write writes the format,
// Parse and ReadFile read it.
//
// # Format (version 2)
//
// UTF-8 text, one record per line; every line ends with '\n' (a '\r' before
// it is dropped). The first line is exactly "drakit-nvml-state v2"; the last
// line is the end record, "end". Every other line is a record type word
// followed by fields, all separated by one TAB; a field is key=value. Values
// never contain TAB or newline (Validate enforces it). Blank lines and lines
// starting with '#' are ignored. Unknown keys are ignored by readers, so later
// versions may add fields; unknown record types are ignored too.
//
// Records:
//
//	system  driverVersion=570.172.08  nvmlVersion=12.570.172.08  cudaDriverVersion=12080
//	gpu     minor=0  uuid=GPU-…  name=NVIDIA H100 80GB HBM3  busId=00000000:1B:00.0
//	        pciDeviceId=0x233010DE  pciSubSystemId=0x16C110DE  memoryTotal=85520809984
//	        memoryReserved=…  architecture=9  brand=2  ccMajor=9  ccMinor=0
//	        numaNode=0  migCapable=1  migMode=0
//	end
//
// The end record (EndRecord) has no fields (a reader ignores any, as for
// every record) and ends the file: exactly one, last, nothing after it, not
// even a blank line or a comment. A file without it, or whose last line has
// no newline, was cut short (a full disk, an interrupted writer) and is an
// error naming the line (ReadFile adds the file): "line 57: end of file
// before the end record "end": the file is truncated". Version 1 was
// version 2 without the end record; readers refuse a version-1 file (render
// the root again).
//
// gpu records appear in NVML enumeration order (ascending PCI bus id). Integers
// are decimal digits (signed fields may start with '-') or 0x followed by hex
// digits; nothing else (no '+', no underscores, no octal). Signed fields are
// 32-bit. Version strings are at most 79 characters (NVML's buffers hold 80
// bytes), lines at most 1 MiB. busId uses NVML's form: an 8-hex-digit domain,
// upper-case hex digits.
//
// # MIG records
//
// A MIG-capable GPU may have MIG records; they may appear anywhere between
// the header and the end record and are written after the gpu records in
// this order. Lists are
// comma-separated non-negative integers.
//
//		mig        gpu=0  maxDevices=7  memorySlices=8
//		giprofile  gpu=0  id=9  index=2  name=3g.20gb  slices=3  memorySlices=4  instances=2
//		           memoryMB=19968  sms=42  copyEngines=3  decoders=2  encoders=0  jpegs=0
//		           ofas=0  p2p=0  placements=0,4
//		ciprofile  gpu=0  giProfile=9  id=0  name=1c.3g.20gb  slices=1  instances=3  sms=14
//		           placements=0,1,2
//		gi         gpu=0  id=1  profile=9  start=4  size=4  capMinor=12
//		ci         gpu=0  gi=1  id=0  profile=2  start=0  size=3  uuid=MIG-…  capMinor=13
//
//	  - mig: the GPU's MIG geometry; one per GPU, only on a migCapable gpu.
//	    maxDevices is nvmlDeviceGetMaxMigDeviceCount. A GPU without it has no
//	    MIG profiles.
//	  - giprofile: nvmlGpuInstanceProfileInfo_t of one GI profile. id is the
//	    driver's profile ID (what placement/create calls and
//	    nvmlGpuInstanceInfo_t.profileId use, 19 for 1g.5gb); index is the
//	    NVML_GPU_INSTANCE_PROFILE_* value nvmlDeviceGetGpuInstanceProfileInfo
//	    is called with. Each placement is start:memorySlices
//	    (nvmlDeviceGetGpuInstancePossiblePlacements). ids and indexes are
//	    unique per GPU.
//	  - ciprofile: nvmlComputeInstanceProfileInfo_t of one CI profile inside
//	    GIs of GI profile giProfile; id is NVML_COMPUTE_INSTANCE_PROFILE_*,
//	    the shared engine counts are the GI profile's, placements are
//	    start:slices inside the GI.
//	  - gi: an existing GPU instance (only when the gpu's migMode=1): GI id
//	    0..14, its profile ID and placement; capMinor is the minor of
//	    /dev/nvidia-caps/nvidia-cap<minor> for gpu<g>/gi<id>/access,
//	    GIAccessMinor = 3 + g·135 + id·9. GIs of a GPU do not overlap.
//	  - ci: an existing compute instance = one MIG device: its GI, CI id 0..7,
//	    CI profile ID and placement inside the GI, its MIG-<uuid> and capMinor
//	    CIAccessMinor = GIAccessMinor(g, gi) + 1 + id. CIs of a GI do not
//	    overlap; a GPU has at most maxDevices of them. MIG device handles
//	    (nvmlDeviceGetMigDeviceHandleByIndex) are the GPU's CIs ordered by
//	    (gi, id).
//
// Validate (and so Parse) rejects a file whose MIG records are inconsistent
// with each other or with the gpu records, naming the record by type and
// position (e.g. "gi[1].capMinor"). The C shim skipped these record types
// before it learned MIG; a shim that reads them must accept exactly what
// Parse accepts.
//
// # Fault and event records
//
// The health of the GPUs as the kernel driver reports it through NVML
// (written by package emulator/fault, "drakit emulator fault"). They may
// appear anywhere between the header and the end record; Write puts them
// after the gpu records, faults then events, before the MIG records (so the
// shim's MIG rewrite, which keeps every line but gi, ci and end in place,
// writes the same order).
//
//		fault  gpu=0  sbeVolatile=0  dbeVolatile=1  sbeAggregate=0  dbeAggregate=1  retiredSbe=0
//		       retiredDbe=0  retiredPending=1  remappedCor=0  remappedUnc=0  remapPending=0
//		       remapFailure=0  recoveryAction=1  clocksEventReasons=0x0  temperature=35  lost=0
//		event  seq=7  type=xid  gpu=0  gi=0xFFFFFFFF  ci=0xFFFFFFFF  data=48  time=1764680000000000
//
//	  - fault (Fault): at most one per GPU; a GPU without one is healthy (Healthy:
//	    zero counts, recovery action none, no clocks event reason,
//	    DefaultTemperature). ECC counts (nvmlDeviceGetTotalEccErrors; single-bit
//	    = corrected) are unsigned 64-bit, the aggregate at least the volatile;
//	    retiredSbe/retiredDbe are the pages retired for multiple single-bit and
//	    for double-bit errors (nvmlDeviceGetRetiredPages), retiredPending
//	    nvmlDeviceGetRetiredPagesPendingStatus; remappedCor, remappedUnc,
//	    remapPending and remapFailure nvmlDeviceGetRemappedRows; counts are
//	    non-negative 32-bit. recoveryAction is nvmlGpuRecoveryAction_t 0..7
//	    (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: none, gpu-reset, node-reboot,
//	    drain-p2p, drain-and-reset, recover-imex-domain, bus-reset,
//	    system-reboot); clocksEventReasons a mask of nvmlClocksEventReason bits
//	    0x1..0x100 (AllClocksEventReasons); temperature °C 0..200. lost=1: the
//	    GPU fell off the bus: NVML no longer enumerates it, even where its
//	    device node remains, and answers NVML_ERROR_GPU_IS_LOST on every handle
//	    of it and of its MIG devices.
//	  - event (Event): one NVML event, in ascending seq (unsigned 64-bit, from
//	    1, never reused; a file keeps at most MaxEvents = 256, the newest:
//	    AppendEvent numbers and trims). type is xid
//	    (nvmlEventTypeXidCriticalError; data is the Xid), sbe or dbe
//	    (nvmlEventTypeSingleBitEccError, DoubleBitEccError; data is the count
//	    added). gpu names a gpu record; gi and ci (32-bit) are the MIG
//	    instance's ids (gi 0..14, ci 0..7), or 0xFFFFFFFF (NoInstance) for a
//	    GPU-wide event; a ci id needs a gi id. The instance need not exist any
//	    more (an event of a MIG device that vanished). time is microseconds
//	    since the Unix epoch.
//
// The shim's event sets see the events with a seq above the newest one when
// the set was created (emulator/nvml, events.c).
//
// # NVLink, fabric and peer records
//
// A node's NVLink fabric (nvlink.go). They may appear anywhere between the
// header and the end record; Write puts them after the fault and event
// records, before the MIG records.
//
//		nvlink  gpu=0  link=3  state=1  version=6  remoteType=2  remoteBusId=00000000:01:00.0
//		        remotePciDeviceId=0x22A310DE
//		fabric  gpu=0  clusterUuid=6a1c2f0e-93b4-4d57-8e21-0c7f5a9d3b11  cliqueId=1  state=3
//		        status=0  healthMask=0x1AA
//		peer    gpu=0  peer=1  ancestor=10  nvlink=1
//
//	  - nvlink (NVLink): one link of a GPU, link 0..MaxNVLinks-1 (18), once
//	    per GPU and link; state 1 = active; version is nvmlNvlinkVersion_t
//	    1..8 (6 = NVLink 4.0); remoteType 0 (GPU: remoteBusId is another gpu
//	    record's busId) or 2 (NVSwitch: any bus id, an NVSwitch of the node
//	    or of the rack's switch trays); remotePciDeviceId as pciDeviceId. A
//	    link without a record is not supported.
//	  - fabric (Fabric): at most one per GPU, nvmlDeviceGetGpuFabricInfo[V];
//	    clusterUuid lower-case 8-4-4-4-12 hex (the shim reports its 16
//	    bytes); cliqueId unsigned 32-bit; state nvmlGpuFabricState_t 0..3;
//	    status a signed 32-bit nvmlReturn_t; healthMask unsigned 32-bit.
//	  - peer (Peer): two different gpu records, each unordered pair at most
//	    once; ancestor nvmlGpuTopologyLevel_t 0, 10, .., 50
//	    (nvmlDeviceGetTopologyCommonAncestor); nvlink 1 when the pair is
//	    connected over NVLink (nvmlDeviceGetP2PStatus).
//
// # Concurrent updates
//
// Once MIG instances are created and destroyed at run time (driver, CLI and
// pods share the file), every writer follows one protocol: take an exclusive
// flock(2) on the lock file <state>.lock (run/drakit-emulator/nvml.state.lock,
// created if missing, never deleted), read and parse the state, change it,
// write the whole new file to a temporary file in the same directory, fsync
// it, rename(2) it over the state file, then release the lock. The lock is on
// a separate file because rename replaces the state file's inode, so a lock
// held on the state file itself would not exclude a writer that opened the
// new one. Readers need no lock: rename is atomic, so a reader sees the old
// or the new file, never a mix; a reader that decides on what it read and
// then writes (check-then-create) must hold the lock across both. Go
// writers go through Update, which does exactly this and bumps the
// generation (below) after its rename, before it releases the lock (the
// fault injection of package emulator/fault, and whatever else changes the
// state from Go). The
// renderer, which owns the root while it renders, writes the file the same
// way (temporary file, fsync, rename) without the lock. Every writer writes
// the whole file, ending with the end record, so a partial file that is left
// by other means (a full disk, a plain write that was interrupted) is
// refused by both readers.
//
// # Generation file
//
// Beside the state file lies the generation file
// <root>/run/drakit-emulator/nvml.generation (GenerationRelativePath): one
// page (GenerationFileSize, 4096 bytes), starting with the 8 ASCII bytes
// "drkgen01" (GenerationMagic), then a uint64 counter in the host's byte
// order at offset 8; the rest is zero. Every writer of the state file calls
// BumpGeneration (the shim's MIG mutations its C twin) after it renamed the
// new state file into place, while it still holds the lock where it takes
// one; the renderer bumps the new root's file and, after the swap, the
// replaced root's. BumpGeneration adds one with an atomic add on a shared
// mapping, so concurrent writers lose no increment; it creates a missing
// file, extends a short one with zeros and rewrites a wrong magic, and
// never truncates, replaces or removes it, because readers map its inode.
// Only the renderer replaces it, with the whole run/drakit-emulator
// directory, and it bumps the old one for that.
//
// The shim maps the file read-only (MAP_SHARED) on nvmlInit and reads the
// counter with an atomic load at every call: a value other than the one it
// read before its state means reread, with no system call per call. A
// shared mapping is of the inode, so this holds across mount namespaces and
// in containers, where the reference driver's CDI spec bind-mounts the
// run/drakit-emulator directory. Without a valid file (none: a root
// rendered by an older drakit; shorter than 16 bytes; without the magic)
// the shim stats the state file at every call instead, as before, and says
// why on stderr with $DRAKIT_NVML_DEBUG; at each reread it tries the file
// again, so a file a writer created or repaired takes over.
//
// # Visibility
//
// As on real hardware, a process sees only the GPUs whose device node it can
// see: the shim lists a gpu record only if <root>/dev/nvidia<minor> exists,
// and numbers the visible GPUs 0..n-1 in file order. <root> is
// $DRAKIT_EMULATOR_ROOT when set and non-empty; otherwise it is derived from the shim's own
// path (<root>/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.*), which makes it "/"
// inside a container.
package nvmlstate
