package clusterprofile

import (
	"fmt"
	"strconv"
	"strings"
)

// Box is an X×Y×Z box of TPU chips: a slice's torus or a host's chips.
type Box struct{ X, Y, Z int }

// maxBoxSide bounds each side of a box.
const maxBoxSide = 64

// ParseBox reads "XxYxZ", each side 1..64.
func ParseBox(s string) (Box, error) {
	parts := strings.Split(s, "x")
	if len(parts) != 3 {
		return Box{}, fmt.Errorf("%q is not XxYxZ", s)
	}
	var sides [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > maxBoxSide || strconv.Itoa(n) != p {
			return Box{}, fmt.Errorf("%q is not XxYxZ with sides 1..%d", s, maxBoxSide)
		}
		sides[i] = n
	}
	return Box{sides[0], sides[1], sides[2]}, nil
}

// String is "XxYxZ".
func (b Box) String() string { return fmt.Sprintf("%dx%dx%d", b.X, b.Y, b.Z) }

// Volume is the number of chips.
func (b Box) Volume() int { return b.X * b.Y * b.Z }

// Divides reports whether boxes of b tile t.
func (b Box) Divides(t Box) bool { return t.X%b.X == 0 && t.Y%b.Y == 0 && t.Z%b.Z == 0 }

// Coord is a chip's place in a torus.
type Coord struct{ X, Y, Z int }

// At is the i-th point of b in x, then y, then z order.
func (b Box) At(i int) Coord {
	return Coord{i % b.X, i / b.X % b.Y, i / (b.X * b.Y)}
}

// HostOrigin is the torus coordinate of the first chip of worker w when
// hosts of chipBounds tile topology in x, then y, then z order.
func HostOrigin(topology, chipBounds Box, worker int) Coord {
	grid := Box{topology.X / chipBounds.X, topology.Y / chipBounds.Y, topology.Z / chipBounds.Z}
	c := grid.At(worker)
	return Coord{c.X * chipBounds.X, c.Y * chipBounds.Y, c.Z * chipBounds.Z}
}

// ChipCoord is the torus coordinate of chip i of worker w (chips of a host
// in x, then y, then z order).
func ChipCoord(topology, chipBounds Box, worker, chip int) Coord {
	o, c := HostOrigin(topology, chipBounds, worker), chipBounds.At(chip)
	return Coord{o.X + c.X, o.Y + c.Y, o.Z + c.Z}
}
