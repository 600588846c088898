package tpuhw

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBounds is wrapped by every error of ParseBounds.
var ErrBounds = errors.New("invalid TPU bounds")

// MaxDimension is the largest size ParseBounds accepts in one dimension,
// and MaxChips the largest chip count (a v5p pod is 16x16x24, 6144 chips).
const (
	MaxDimension = 64
	MaxChips     = 8192
)

// Bounds is a box of chips, X by Y by Z, each at least 1.
type Bounds struct{ X, Y, Z int }

// ParseBounds parses "XxYxZ", or "XxY" for a box one chip deep (Z 1), each
// size a decimal number from 1 to MaxDimension.
func ParseBounds(s string) (Bounds, error) {
	parts := strings.Split(s, "x")
	if len(parts) != 2 && len(parts) != 3 {
		return Bounds{}, fmt.Errorf("%w: %q: want XxYxZ (or XxY), e.g. 2x2x1", ErrBounds, s)
	}
	var dims [3]int
	dims[2] = 1
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || p == "" || p[0] == '+' || p[0] == '-' || (len(p) > 1 && p[0] == '0') {
			return Bounds{}, fmt.Errorf("%w: %q: size %q of dimension %c is not a decimal number", ErrBounds, s, p, "xyz"[i])
		}
		if n < 1 || n > MaxDimension {
			return Bounds{}, fmt.Errorf("%w: %q: size %d of dimension %c must be 1..%d", ErrBounds, s, n, "xyz"[i], MaxDimension)
		}
		dims[i] = n
	}
	b := Bounds{dims[0], dims[1], dims[2]}
	if b.Chips() > MaxChips {
		return Bounds{}, fmt.Errorf("%w: %q: %d chips, more than %d", ErrBounds, s, b.Chips(), MaxChips)
	}
	return b, nil
}

// String is "XxYxZ".
func (b Bounds) String() string { return fmt.Sprintf("%dx%dx%d", b.X, b.Y, b.Z) }

// Chips is the number of chips in the box.
func (b Bounds) Chips() int { return b.X * b.Y * b.Z }

// Dim is the size of dimension d (0 x, 1 y, 2 z).
func (b Bounds) Dim(d int) int { return [3]int{b.X, b.Y, b.Z}[d] }

// Contains reports whether c lies in the box anchored at 0,0,0.
func (b Bounds) Contains(c Coord) bool {
	return c.X >= 0 && c.Y >= 0 && c.Z >= 0 && c.X < b.X && c.Y < b.Y && c.Z < b.Z
}

// Index numbers c within the box: x fastest, then y, then z.
func (b Bounds) Index(c Coord) int { return c.X + b.X*(c.Y+b.Y*c.Z) }

// Coord is the inverse of Index.
func (b Bounds) Coord(i int) Coord { return Coord{i % b.X, (i / b.X) % b.Y, i / (b.X * b.Y)} }

// Divides reports whether every dimension of b divides the same dimension
// of outer.
func (b Bounds) Divides(outer Bounds) bool {
	return outer.X%b.X == 0 && outer.Y%b.Y == 0 && outer.Z%b.Z == 0
}

// Coord is a chip's position in a torus.
type Coord struct{ X, Y, Z int }

// String is "x,y,z".
func (c Coord) String() string { return fmt.Sprintf("%d,%d,%d", c.X, c.Y, c.Z) }

// Dim is coordinate d (0 x, 1 y, 2 z).
func (c Coord) Dim(d int) int { return [3]int{c.X, c.Y, c.Z}[d] }

func coordOf(d [3]int) Coord { return Coord{d[0], d[1], d[2]} }
