package tpuhw

import (
	"cmp"
	"fmt"
	"slices"
)

// Wraps reports whether dimension d of the torus b has a wrap-around link.
//
// The rule: a dimension of size 3 or more is a ring, its last chip linked
// back to its first (TPU pods and full-cube slices). A dimension of size 2
// is one link between its two chips: they are each other's only neighbour
// in that dimension, counted once, and there is no separate wrap-around
// link. A dimension of size 1 has no links. Placements follow the same
// rule: a sub-shape may wrap around only a dimension that Wraps.
func (b Bounds) Wraps(d int) bool { return b.Dim(d) >= 3 }

// Neighbours returns the chips linked to c in the torus b, in Index order,
// each once.
func (b Bounds) Neighbours(c Coord) []Coord {
	var out []Coord
	for d := range 3 {
		size := b.Dim(d)
		for _, step := range []int{-1, 1} {
			v := c.Dim(d) + step
			if v < 0 || v >= size {
				if !b.Wraps(d) {
					continue
				}
				v = (v + size) % size
			}
			if v == c.Dim(d) {
				continue
			}
			n := [3]int{c.X, c.Y, c.Z}
			n[d] = v
			if nc := coordOf(n); !slices.Contains(out, nc) {
				out = append(out, nc)
			}
		}
	}
	slices.SortFunc(out, func(p, q Coord) int { return cmp.Compare(b.Index(p), b.Index(q)) })
	return out
}

// Connected reports whether coords, all inside b, form one connected
// group over the torus links (an empty set is not connected).
func (b Bounds) Connected(coords []Coord) bool {
	if len(coords) == 0 {
		return false
	}
	in := map[Coord]bool{}
	for _, c := range coords {
		if !b.Contains(c) {
			return false
		}
		in[c] = true
	}
	seen := map[Coord]bool{coords[0]: true}
	queue := []Coord{coords[0]}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, n := range b.Neighbours(c) {
			if in[n] && !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return len(seen) == len(in)
}

// Placement is a sub-shape of a torus at an origin: the chips origin+offset
// for every offset in Shape, each coordinate taken modulo the torus size.
type Placement struct {
	Origin Coord
	Shape  Bounds
}

// String is "<shape>@<origin>", e.g. "2x2x2@0,0,2".
func (p Placement) String() string { return fmt.Sprintf("%s@%s", p.Shape, p.Origin) }

// Coords returns the placement's chips in the torus b, in offset order
// (x fastest).
func (p Placement) Coords(b Bounds) []Coord {
	out := make([]Coord, 0, p.Shape.Chips())
	for i := range p.Shape.Chips() {
		o := p.Shape.Coord(i)
		out = append(out, Coord{(p.Origin.X + o.X) % b.X, (p.Origin.Y + o.Y) % b.Y, (p.Origin.Z + o.Z) % b.Z})
	}
	return out
}

// Placements returns every placement of shape in the torus b, origins in
// Index order. In a dimension where shape is as large as the torus there is
// one origin, 0 (all origins cover the same chips); where it is smaller,
// the origins run over the whole dimension if it Wraps (a placement may
// wrap around) and up to size-extent otherwise. None when shape does not
// fit.
func (b Bounds) Placements(shape Bounds) []Placement {
	var origins [3][]int
	for d := range 3 {
		size, extent := b.Dim(d), shape.Dim(d)
		last := -1
		switch {
		case extent > size:
			return nil
		case extent == size:
			last = 0
		case b.Wraps(d):
			last = size - 1
		default:
			last = size - extent
		}
		for v := 0; v <= last; v++ {
			origins[d] = append(origins[d], v)
		}
	}
	var out []Placement
	for _, z := range origins[2] {
		for _, y := range origins[1] {
			for _, x := range origins[0] {
				out = append(out, Placement{Origin: Coord{x, y, z}, Shape: shape})
			}
		}
	}
	return out
}

// IsSubTorus reports whether coords are exactly the chips of one placement
// of shape in the torus b (in that orientation), each chip once.
func (b Bounds) IsSubTorus(coords []Coord, shape Bounds) bool {
	if len(coords) != shape.Chips() {
		return false
	}
	set := map[Coord]bool{}
	for _, c := range coords {
		if !b.Contains(c) || set[c] {
			return false
		}
		set[c] = true
	}
	for _, p := range b.Placements(shape) {
		if coversExactly(p.Coords(b), set) {
			return true
		}
	}
	return false
}

func coversExactly(coords []Coord, set map[Coord]bool) bool {
	for _, c := range coords {
		if !set[c] {
			return false
		}
	}
	return len(coords) == len(set)
}
