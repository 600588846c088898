// Package tpu describes a node's TPU-like accelerator chips in a node
// profile: the chips of one host, their generation and, for a multi-host
// slice, the 3D torus the host belongs to and its place in it.
//
// The profile package embeds Host as spec.tpu and calls Validate; the
// render package turns it into the surfaces a TPU driver reads (PCI
// functions with Google's vendor ID, /dev/accel<N> or vfio nodes, the
// host's position in the slice). Torus geometry itself (coordinates,
// neighbours, sub-torus shapes) is a shared hardware fact in
// internal/tpuhw, used by the emulator, the reference driver and the kit.
package tpu
