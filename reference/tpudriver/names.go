package tpudriver

import (
	"fmt"
	"strconv"
	"strings"

	"drakit.dev/drakit/internal/tpuhw"
)

// Names the driver publishes (the fabric contract the kit and benches rely
// on): attributes in the driver's domain, device and pool names.
const (
	AttrType       = "type"
	AttrUUID       = "uuid"
	AttrGeneration = "generation"
	AttrSlice      = "slice"
	AttrTopology   = "topology"
	AttrChipBounds = "chipBounds"
	AttrX          = "x"
	AttrY          = "y"
	AttrZ          = "z"
	AttrWorkerID   = "workerID"
	AttrIndex      = "index"
	AttrShape      = "shape"
	AttrChips      = "chips"
	AttrHosts      = "hosts"

	// TypeChip and TypeSubslice are the values of AttrType.
	TypeChip     = "chip"
	TypeSubslice = "subslice"

	// SubslicePoolPrefix starts the name of a slice's sub-slice pool,
	// slice-<slice name>.
	SubslicePoolPrefix = "slice-"
)

// ChipUUID is a chip's identity, unique in the cluster: TPU-<node>-<index>.
func ChipUUID(node string, index int) string { return fmt.Sprintf("TPU-%s-%d", node, index) }

// SubsliceUUID is a sub-slice's identity, unique in the cluster and stable
// while its slice keeps its name: TPU-SUB-<slice>-<device>.
func SubsliceUUID(slice, device string) string { return fmt.Sprintf("TPU-SUB-%s-%s", slice, device) }

// ChipDevice names chip index on its node's pool, chip-<index>.
func ChipDevice(index int) string { return fmt.Sprintf("chip-%d", index) }

// parseChipDevice is the inverse of ChipDevice.
func parseChipDevice(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "chip-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0 && strconv.Itoa(n) == rest
}

// SubsliceDevice names a placement, sub-<shape>-<x>-<y>-<z> (its origin).
func SubsliceDevice(p tpuhw.Placement) string {
	return fmt.Sprintf("sub-%s-%d-%d-%d", p.Shape, p.Origin.X, p.Origin.Y, p.Origin.Z)
}

// ParseSubsliceDevice is the inverse of SubsliceDevice.
func ParseSubsliceDevice(name string) (tpuhw.Placement, error) {
	parts := strings.Split(name, "-")
	if len(parts) != 5 || parts[0] != "sub" {
		return tpuhw.Placement{}, fmt.Errorf("device %q is not sub-<shape>-<x>-<y>-<z>", name)
	}
	shape, err := tpuhw.ParseBounds(parts[1])
	if err != nil {
		return tpuhw.Placement{}, fmt.Errorf("device %q: %w", name, err)
	}
	var o [3]int
	for i, s := range parts[2:] {
		if o[i], err = strconv.Atoi(s); err != nil || o[i] < 0 {
			return tpuhw.Placement{}, fmt.Errorf("device %q: origin %q is not a coordinate", name, s)
		}
	}
	return tpuhw.Placement{Origin: tpuhw.Coord{X: o[0], Y: o[1], Z: o[2]}, Shape: shape}, nil
}

// SubslicePool names the sub-slice pool of slice name.
func SubslicePool(slice string) string { return SubslicePoolPrefix + slice }
