// Package nri is the emulator's containerd NRI plugin: it gives NVML to
// every container that gets an emulated GPU, whatever the DRA driver's CDI
// edits hold.
//
// On a real node a container that is given /dev/nvidia<minor> talks to the
// kernel driver through it, and the node's container stack puts the driver's
// libnvidia-ml.so.1 in it. On an emulated node the "kernel driver" is the
// NVML state file under <root>/run/drakit-emulator (package nvmlstate) and
// the library is the emulator's shim, so a driver whose CDI edits give only
// the device nodes, as a third-party NVIDIA-style driver's do, would leave
// its containers without NVML. This plugin closes that gap at container
// creation: a container with a character device of the NVIDIA major
// (render.NvidiaMajor) and a GPU minor gets, read-only, the shim at
// /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 and the state directory at
// /run/drakit-emulator, unless something (the reference driver's CDI spec)
// already mounts them there. Containers without an emulated GPU, and every
// container while the root holds no NVML state, are left as they are.
//
// The local cluster installs the plugin as a pre-registered NRI plugin of
// each node's containerd (containerd launches it and hands it its
// connection), with that node's emulator root.
package nri
