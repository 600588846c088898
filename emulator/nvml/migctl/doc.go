// Package migctl manages the MIG state of an emulated node the way
// nvidia-smi mig does on a host: through NVML (go-nvml over the emulator's
// NVML shim), so every change follows the shim's rules and locking and is
// seen at once by every other NVML user of the root (driver, pods).
//
// Contracts:
//   - Config.Root is the emulator root; Config.Library the NVML library,
//     by default the shim render installed, <Root>/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1.
//     Open sets $DRAKIT_EMULATOR_ROOT to Root (process-wide, as NVML's
//     binding is) before nvmlInit.
//   - GPUs are named by NVML index, profiles by name (3g.40gb, 1c.3g.40gb).
//     Create makes one GPU instance and one compute instance in it (the
//     GI-wide one unless a CI profile is given); Destroy removes a GPU
//     instance with all its compute instances.
//   - NVML failures wrap the nvml.Return, so errors.Is(err,
//     nvml.ERROR_INSUFFICIENT_RESOURCES) and the like work; bad input
//     (unknown profile, GPU index out of range) wraps ErrInvalid.
package migctl
