// Package nvidiahw holds facts of real NVIDIA hardware and drivers that
// drakit deals with from two sides: the emulator reproduces them (its
// NVML state, its /proc and /dev trees) and the conformance kit checks
// them in a pod's containers. Each fact is stated once, here, with where
// it comes from and a test pinned to what the real driver shows, so that
// the emulator and the kit cannot drift apart and neither imports the
// other's internals.
//
// Today it holds the catalogue of Xid errors (Xids: code, name, whom it
// blames, what to do) and the numbering of MIG capabilities, the minors of
// /dev/nvidia-caps/nvidia-cap<minor> listed in
// /proc/driver/nvidia-caps/mig-minors (GIAccessMinor, CIAccessMinor).
package nvidiahw
