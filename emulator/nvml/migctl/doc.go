// Package migctl manages the MIG state of an emulated node the way
// nvidia-smi mig does on a host: through NVML (go-nvml over the emulator's
// NVML shim), so every change follows the shim's rules and locking and is
// seen at once by every other NVML user of the root (driver, pods).
//
// Contracts:
//   - Config.Root is the emulator root; Config.Library the NVML library,
//     by default the shim render installed, <Root>/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1.
//     Before NVML binds to the library (for good: go-nvml resolves its
//     functions lazily, so a missing one would kill the process), Open
//     reads its ELF dynamic symbols without loading it: a file that is not a
//     shared library of this architecture, or does not define every NVML
//     function a Session calls, is ErrInvalid naming the library and the
//     first missing function. Open sets $DRAKIT_EMULATOR_ROOT to Root
//     (process-wide, as NVML's binding is) before nvmlInit.
//   - GPUs are named by NVML index, profiles by name (3g.40gb, 1c.3g.40gb).
//     Create makes one GPU instance and one compute instance in it (the
//     GI-wide one unless a CI profile is given); Destroy removes a GPU
//     instance with all its compute instances.
//   - Create and Destroy need a MIG-capable GPU (else ErrInvalid) with MIG
//     mode on (else ErrMIGDisabled); disabling MIG mode of a GPU that
//     still has GPU instances is an *InstancesError naming them (it wraps
//     nvml.ERROR_IN_USE). A CreateRequest's Placement is nil (NVML
//     chooses) or 0 or more (CreateRequest.Validate).
//   - NVML failures wrap the nvml.Return, so errors.Is(err,
//     nvml.ERROR_INSUFFICIENT_RESOURCES) and the like work; bad input
//     (unknown profile, GPU index out of range, negative placement) wraps
//     ErrInvalid.
package migctl
