// Package nvmlstate defines the NVML state file: the emulated GPUs as the
// emulator's "kernel driver" exposes them to the NVML shim (libnvidia-ml.so.1,
// written in C under emulator/nvml/shim).
//
// The emulator renders the file at <root>/run/drakit-emulator/nvml.state; the
// shim reads it on nvmlInit. Inside a container the reference driver's CDI spec
// mounts it read-only at /run/drakit-emulator/nvml.state.
//
// # Format (version 1)
//
// UTF-8 text, one record per line, lines end with '\n'. The first line is
// exactly "drakit-nvml-state v1". Every other line is a record type word
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
//
// gpu records appear in NVML enumeration order (ascending PCI bus id). Integers
// are decimal digits (signed fields may start with '-') or 0x followed by hex
// digits; nothing else (no '+', no underscores, no octal). Signed fields are
// 32-bit. Version strings are at most 79 characters (NVML's buffers hold 80
// bytes), lines at most 1 MiB. busId uses NVML's form: an 8-hex-digit domain,
// upper-case hex digits.
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
