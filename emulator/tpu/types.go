package tpu

import "drakit.dev/drakit/emulator/platform"

// Host is spec.tpu of a node profile.
type Host struct {
	// Generation is the chip generation (v4, v5e, v5p, v6e); it gives the
	// PCI device ID.
	Generation string `json:"generation"`
	// ChipBounds is the host's chips as an XxYxZ box, e.g. "2x2x1" for 4
	// chips.
	ChipBounds string `json:"chipBounds"`
	// Slice places the host in a multi-host torus; nil for a single-host
	// slice of ChipBounds.
	Slice *Slice `json:"slice,omitempty"`
	// Chips place the host's chips on the PCIe tree, one per chip of
	// ChipBounds; chips[i] is chip index i (x, then y, then z within the
	// host's box), /dev/accel<i>. Default: spread evenly over the root
	// complexes in spec order, each on the next bus after those the
	// GPUs, NICs and switches of its root complex use.
	Chips []Chip `json:"chips,omitempty"`
}

// Chip is one TPU chip of a host.
type Chip struct {
	// PCIe places the chip's PCI function.
	PCIe platform.Placement `json:"pcie"`
}

// Slice is a multi-host TPU slice: a 3D torus of chips over several hosts.
type Slice struct {
	// Name identifies the slice; every host of one slice has the same.
	Name string `json:"name"`
	// Topology is the slice's chips as an XxYxZ torus, e.g. "4x4x4".
	Topology string `json:"topology"`
	// WorkerID is this host's index in the slice (TPU_WORKER_ID), from 0;
	// hosts tile the torus with ChipBounds boxes in x, then y, then z order.
	WorkerID int `json:"workerID"`
}
