package tpu

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
