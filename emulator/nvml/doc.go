// Package nvml builds the emulator's NVML library: libnvidia-ml.so.1, a C
// shared library that exports NVIDIA's NVML C ABI over the emulator's state
// file, so that unmodified NVML clients (github.com/NVIDIA/go-nvml, and the
// DRA drivers and tools built on it) discover emulated GPUs.
//
// # The library (C sources in shim/)
//
//   - SONAME libnvidia-ml.so.1; it exports exactly the functions go-nvml's
//     nvml.h declares (versioned and unversioned names) and nothing else.
//     The functions of NVML's discovery path are implemented
//     (ImplementedFunctions lists them, read from the NVML_EXPORT
//     definitions of the embedded sources; "drakit emulator shim-functions"
//     prints them); every other one is a weak stub returning
//     NVML_ERROR_NOT_SUPPORTED, so a client never dies on an unresolved
//     symbol. The stubs are generated from the header (go generate; a test
//     fails when shim/nvml_stubs_gen.c is out of date with the go-nvml
//     version in go.mod).
//   - nvmlInit reads <root>/run/drakit-emulator/nvml.state (package
//     emulator/nvmlstate; the shim accepts exactly the files nvmlstate.Parse
//     accepts) and lists a GPU only if <root>/dev/nvidia<minor> exists,
//     numbering the visible GPUs 0..n-1 in file order. <root> is
//     $DRAKIT_EMULATOR_ROOT when set and non-empty, else the shim's own path
//     minus /usr/lib/x86_64-linux-gnu/<file>, else "/".
//   - Device queries (shim/device.c) answer from the GPU's state record;
//     besides identity, memory, PCI info, architecture, brand, compute
//     capability, MIG mode and NUMA node: addressing mode HMM from Turing on
//     (what the open kernel modules give on x86-64; NOT_SUPPORTED before,
//     struct version checked), bus type PCIe, compute mode DEFAULT, and
//     empty compute, graphics and MPS process lists. A MIG device handle
//     answers with its GPU's value, except for GPU settings (minor, index,
//     MIG mode, compute mode, persistence, events: NOT_SUPPORTED).
//   - Events (shim/events.c): event sets for health monitors, over the state
//     file's event records (nvmlstate's fault.go). A GPU supports ECC,
//     P-state, clock and XID events (and MIG configuration changes when MIG
//     capable), a MIG device XID and ECC events; registering others is
//     NOT_SUPPORTED. A set sees the events with a sequence number above the
//     newest one when it was created, one per nvmlEventSetWait[_v2], of the
//     types registered for their device, with nvmlEventData_t's device
//     handle, eventType, eventData and GI/CI ids (0xFFFFFFFF for a GPU-wide
//     event): on a GPU handle the GPU's events, its MIG devices' included;
//     on a MIG device handle that device's and the GPU-wide ones. A wait that
//     finds none blocks without the library's lock on inotify on the state
//     file's directory (IN_MOVED_TO, IN_CLOSE_WRITE), rereads the state when
//     the file was replaced (by its identity: a writer bumps the generation
//     only after its rename) and looks again, until its timeout:
//     NVML_ERROR_TIMEOUT (without inotify: it sleeps out the timeout in
//     100 ms steps). At most 64 sets live at once (NVML_ERROR_MEMORY
//     beyond).
//   - Health (shim/health.c): nvmlDeviceGetTotalEccErrors,
//     GetMemoryErrorCounter (all errors in device memory), GetEccMode (on),
//     GetRetiredPages[_v2] (page i of a cause at 0x100000000·(cause+1) +
//     0x1000·i, timestamps 0), GetRetiredPagesPendingStatus,
//     GetRemappedRows, GetCurrentClocksEventReasons and
//     GetCurrentClocksThrottleReasons, GetTemperature (the GPU sensor) and
//     GetFieldValues (ECC mode and counts, retired pages, remapped rows,
//     NVML_FI_DEV_GET_GPU_RECOVERY_ACTION; any other field
//     NVML_ERROR_NOT_SUPPORTED in its nvmlReturn) answer from the GPU's
//     fault record; a MIG device answers with its GPU's.
//   - A GPU handle names the GPU's minor (a slot; slot → minor → the state's
//     minor table: two indexings a query), so it stays valid across rereads
//     whatever other GPUs appear or vanish. A GPU whose fault record says
//     lost is not enumerated (even where its device node remains) and every
//     query on a handle of it or of its MIG devices answers
//     NVML_ERROR_GPU_IS_LOST; lookups by UUID or bus id answer NOT_FOUND.
//   - MIG (shim/mig.c, shim/mig_profiles.c): the read side of NVML's MIG API
//     over the state file's MIG records: GI/CI profile info (by NVML index;
//     info.id is the driver's profile ID), possible placements (two-call
//     protocol), remaining capacity, GI/CI enumeration and lookup by id, MIG
//     device handles by index (empty slot: NOT_FOUND), MIG UUIDs, names
//     ("<GPU name> MIG <profile>"), memory, attributes and parent handles. An
//     instance is visible only when its capability device nodes
//     <root>/dev/nvidia-caps/nvidia-cap<minor> exist. At every call the shim
//     rereads the state file if another process replaced it; handles stay
//     valid while what they name exists. It notices a replaced file through
//     the generation file (nvmlstate, "Generation file"): one atomic load of
//     a shared read-only mapping per call, no system call; without one, a
//     stat of the state file per call (shim/generation.c).
//   - MIG mutations (shim/mig_create.c over shim/mig_ids.c, shim/caps.c and
//     shim/state_write.c):
//     nvmlDeviceSetMigMode (takes effect at once, activation status SUCCESS;
//     IN_USE while the GPU has GPU instances),
//     nvmlDeviceCreateGpuInstance[WithPlacement],
//     nvmlGpuInstanceCreateComputeInstance[WithPlacement] and the Destroy
//     calls, each bumping the generation after its rename. Errors as NVML
//     documents them: MIG off or not MIG capable
//     NOT_SUPPORTED, unknown profile or a placement the profile does not have
//     INVALID_ARGUMENT, overlap, no free placement or the profile's instance
//     count or the GPU's MIG device count reached INSUFFICIENT_RESOURCES,
//     destroying a GI with CIs IN_USE; without the config capability node
//     nvidia-cap1 or the right to mknod, NO_PERMISSION. Each follows
//     nvmlstate's concurrency rule (flock <state>.lock, reread, apply, write
//     a temporary file, fsync, rename) and keeps gi and ci records in
//     nvmlstate.Write's form and (GPU, id) order, followed by the end record.
//     A new GI gets gpu.GIID of its placement (without a placement: the
//     highest free start, as gpu.autoPlace), a CI the lowest free id
//     (without a placement: the lowest free start) and gpu.DeriveMIGUUID.
//     Creating writes the capability access file and the nvidia-caps node
//     (major from <root>/proc/devices) exactly as emulator/render does for a
//     static layout; destroying removes them and the emptied capability
//     directories.
//   - The sources are rooms in a one-way order (shim/shim.c lists them):
//     common helpers and nvmlErrorString (shim/error_string.c); the state
//     core (reader, parser with the fault and event records, generation);
//     state writing; handles and locking, lost GPUs included
//     (shim/handles.c, shim.h); queries (device, health); MIG entry points,
//     queries and mutations; capability nodes; events. No two files call
//     each other and none is over ~500 lines (house_test.go).
//   - Init and shutdown are reference-counted; the state is read on the first
//     nvmlInit after a full shutdown, so a process can switch roots.
//   - A missing state file makes nvmlInit return NVML_ERROR_DRIVER_NOT_LOADED,
//     an unreadable one NVML_ERROR_NO_PERMISSION, a malformed one
//     NVML_ERROR_UNKNOWN; so does a truncated one (no end record, or a last
//     line without a newline), and a MIG mutation over one fails with it and
//     writes nothing. The library never writes to stdout; with
//     $DRAKIT_NVML_DEBUG set it explains an nvmlInit failure on stderr
//     ("…/nvml.state: line 57: end of file before the end record "end": the
//     file is truncated").
//
// # nvidia-smi (C sources in smi/)
//
// NVIDIA's GPU kubelet plugin (k8s-dra-driver-gpu, cmd/gpu-kubelet-plugin)
// refuses to start without an nvidia-smi in its driver root: root.go's
// getNvidiaSMIPath looks for a regular file (symbolic links resolved) named
// nvidia-smi in the root itself, then /opt/bin, /usr/bin, /usr/sbin, /bin,
// /sbin. It runs it later, with LD_PRELOAD naming the root's
// libnvidia-ml.so.1, and checks only the exit status (the output is logged
// on failure): nvlib.go's setComputeMode "-i <GPU UUID> -c DEFAULT" (time
// slicing) or "-c EXCLUSIVE_PROCESS" (MPS; MPS teardown sets DEFAULT again),
// setTimeSlice "compute-policy -i <GPU UUID> --set-timeslice <0..3>", and,
// for passthrough, disableGPUPersistenceMode "chroot <dev root> nvidia-smi
// -i <PCI address> -pm 0".
//
// BuildNvidiaSMI builds the emulator's: a static executable linking the
// shim's sources with smi/, so it is an NVML client of the same code and
// state (visibility through device nodes included) that needs no library
// and runs in a container or chrooted into the root. Its emulator root is
// $DRAKIT_EMULATOR_ROOT, else its own path (/proc/self/exe) minus
// /usr/bin/nvidia-smi (where emulator/render installs it), else "/". It
// answers:
//
//   - -L (GPUs, and MIG devices as "  MIG <profile> Device <n>: (UUID: …)"),
//     --version, the default table and --query-gpu=… --format=csv[,noheader]
//     [,nounits] for the fields -h lists, optionally for -i ids (indexes,
//     UUIDs, PCI bus ids); values NVML does not support show as N/A.
//   - -c MODE, -pm 0|1 and compute-policy --set-timeslice N read the current
//     value through NVML: what a GPU already has (compute mode DEFAULT,
//     persistence off, the default time slice 0) succeeds and changes
//     nothing; anything else calls NVML's setter, which the shim does not
//     implement, and fails with NVML's "Not Supported" and exit code 3 (the
//     time slice has no NVML call: 1..3 fail the same way). So the plugin
//     starts, and its time-slicing at the default interval and passthrough's
//     -pm 0 succeed; MPS and the other intervals fail, because the emulated
//     GPUs have no such settings.
//   - Exit codes are nvidia-smi's: 2 invalid argument, 3 not supported, 6 no
//     such device, 9 no state file; other options are refused with 2.
//
// # Building
//
// BuildShim compiles the embedded sources with a C compiler (gcc by default)
// into BuildOptions.Output, atomically; BuildNvidiaSMI does the same for
// nvidia-smi (also linking statically, which needs the C library's libc.a).
// The sources are self-contained; with BuildOptions.HeaderDir naming go-nvml's
// nvml.h directory (LocateGoNVML finds it) they are compiled against that
// header instead, which checks every implemented prototype, every call
// nvidia-smi makes and every struct layout against NVML's own. Package
// nvmltest builds both once per test binary for tests.
package nvml

//go:generate go run ./internal/cmd/genstubs -o shim/nvml_stubs_gen.c
