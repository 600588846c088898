// Package tpuhw holds facts of TPU-like accelerator chips that drakit deals
// with from three sides: the emulator renders them (PCI functions with
// Google's vendor id, /dev/accel<N> and /dev/vfio/<group> nodes, the host's
// place in its slice), the reference TPU driver reads them back, and the
// conformance kit checks allocations against them. Each fact is stated
// once, here, so that no side imports another's internals (internal/nichw
// and internal/nvidiahw are the same for NICs and NVIDIA GPUs).
//
// It holds:
//
//   - the chip generations and their PCI ids (kubernetes-sigs/
//     dra-driver-google-tpu's table: 0x005e v4, 0x0063 v5e, 0x0062 v5p,
//     0x006f v6e) and the device nodes each generation shows;
//   - torus geometry: Bounds ("XxYxZ", parsed with clear errors), Coord,
//     the neighbours of a chip (see Wraps for the wrap-around rule),
//     Connected, the placements of a sub-shape (Placements) and IsSubTorus,
//     which the kit uses as ground truth;
//   - host tiling of a multi-host slice (Slice): worker ids number the
//     host boxes in x, then y, then z order, and chip indexes number the
//     chips of one host box in the same order;
//   - the ground-truth file the emulator writes for a host
//     (HostFileRelativePath, HostFile), whose format this package owns;
//   - the environment variable names a TPU runtime reads.
package tpuhw
