package tpuhw

import (
	"errors"
	"fmt"
	"slices"
)

// ErrSlice is wrapped by the errors of NewSlice.
var ErrSlice = errors.New("invalid TPU slice")

// Slice is a multi-host slice: a torus Topology tiled by hosts of
// ChipBounds chips each.
type Slice struct {
	Topology   Bounds
	ChipBounds Bounds
}

// NewSlice checks that chipBounds tiles topology.
func NewSlice(topology, chipBounds Bounds) (Slice, error) {
	if !chipBounds.Divides(topology) {
		return Slice{}, fmt.Errorf("%w: topology %s is not a whole number of hosts of %s chips", ErrSlice, topology, chipBounds)
	}
	return Slice{Topology: topology, ChipBounds: chipBounds}, nil
}

// HostBounds is the grid of hosts: the topology divided by ChipBounds.
func (s Slice) HostBounds() Bounds {
	return Bounds{s.Topology.X / s.ChipBounds.X, s.Topology.Y / s.ChipBounds.Y, s.Topology.Z / s.ChipBounds.Z}
}

// Hosts is the number of hosts of the slice.
func (s Slice) Hosts() int { return s.HostBounds().Chips() }

// HostOrigin is the coordinate of chip 0 of host worker: hosts are numbered
// in x, then y, then z order of their boxes.
func (s Slice) HostOrigin(worker int) Coord {
	h := s.HostBounds().Coord(worker)
	return Coord{h.X * s.ChipBounds.X, h.Y * s.ChipBounds.Y, h.Z * s.ChipBounds.Z}
}

// ChipCoord is the coordinate of chip index of host worker; chips of a
// host are numbered in x, then y, then z order within its box.
func (s Slice) ChipCoord(worker, index int) Coord {
	o, c := s.HostOrigin(worker), s.ChipBounds.Coord(index)
	return Coord{o.X + c.X, o.Y + c.Y, o.Z + c.Z}
}

// Locate returns the host holding c and the chip's index on it.
func (s Slice) Locate(c Coord) (worker, index int) {
	h := Coord{c.X / s.ChipBounds.X, c.Y / s.ChipBounds.Y, c.Z / s.ChipBounds.Z}
	in := Coord{c.X % s.ChipBounds.X, c.Y % s.ChipBounds.Y, c.Z % s.ChipBounds.Z}
	return s.HostBounds().Index(h), s.ChipBounds.Index(in)
}

// HostsOf returns the hosts holding chips of p, ascending, each once.
func (s Slice) HostsOf(p Placement) []int {
	var out []int
	for _, c := range p.Coords(s.Topology) {
		if w, _ := s.Locate(c); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

// HostAligned reports whether p covers whole hosts: its origin on a host
// boundary and its shape a whole number of hosts in every dimension.
func (s Slice) HostAligned(p Placement) bool {
	for d := range 3 {
		if p.Origin.Dim(d)%s.ChipBounds.Dim(d) != 0 || p.Shape.Dim(d)%s.ChipBounds.Dim(d) != 0 {
			return false
		}
	}
	return true
}

// ChipsOn returns the chip indexes of host worker that p covers, ascending.
func (s Slice) ChipsOn(p Placement, worker int) []int {
	var out []int
	for _, c := range p.Coords(s.Topology) {
		if w, i := s.Locate(c); w == worker {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}
