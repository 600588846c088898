package tpudriver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/dynamic-resource-allocation/deviceattribute"

	"drakit.dev/drakit/internal/tpuhw"
)

// ErrNoChips is returned by discover when the host shows no TPU chip.
var ErrNoChips = errors.New("no TPU chips found")

// chip is one TPU chip of the node as sysfs and /dev show it.
type chip struct {
	// Index is N of its accel device, accel<N>: its index on the host.
	Index      int
	Address    string
	Generation tpuhw.Generation
	IOMMUGroup int
	// PCIeRoot is resource.kubernetes.io/pcieRoot; empty when unknown.
	PCIeRoot string
	// Coord is the chip's place in the slice torus.
	Coord tpuhw.Coord
}

// host is what the driver knows about its node: the chips and the host's
// place in its slice (tpu-env).
type host struct {
	env   tpuhw.TPUEnv
	chips []chip // by index
}

// discover finds the chips as the upstream driver does, through the IOMMU
// groups: every /sys/kernel/iommu_groups/<g>/devices/<bdf> with vendor
// 0x1ae0 and a known device id; its accel/accel<N> names its index. The
// host's generation, slice and worker id come from the tpu-env file
// (what the GCE metadata server serves). All paths are below hostRoot.
func discover(hostRoot, tpuEnvFile string) (*host, error) {
	data, err := os.ReadFile(tpuEnvFile)
	if err != nil {
		return nil, fmt.Errorf("read tpu-env: %w", err)
	}
	env, err := tpuhw.ParseTPUEnv(string(data))
	if err != nil {
		return nil, fmt.Errorf("read tpu-env %s: %w", tpuEnvFile, err)
	}
	sys := filepath.Join(hostRoot, "sys")
	devs, err := filepath.Glob(filepath.Join(sys, "kernel/iommu_groups/*/devices/*"))
	if err != nil {
		return nil, fmt.Errorf("list IOMMU groups: %w", err)
	}
	fsys := deviceattribute.WithFSFromRoot(sys)
	h := &host{env: env}
	for _, dev := range devs {
		c, ok, err := readChip(dev, fsys)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if c.Generation.Name != env.Generation {
			return nil, fmt.Errorf("chip %s is a %s, tpu-env says %s", c.Address, c.Generation.Name, env.Generation)
		}
		c.Coord = env.Slice.ChipCoord(env.WorkerID, c.Index)
		h.chips = append(h.chips, c)
	}
	slices.SortFunc(h.chips, func(a, b chip) int { return a.Index - b.Index })
	if len(h.chips) == 0 {
		return nil, fmt.Errorf("%w below %s", ErrNoChips, filepath.Join(sys, "kernel/iommu_groups"))
	}
	if want := env.Slice.ChipBounds.Chips(); len(h.chips) != want {
		return nil, fmt.Errorf("found %d TPU chips, tpu-env's CHIPS_PER_HOST_BOUNDS %s says %d", len(h.chips), env.Slice.ChipBounds, want)
	}
	for i, c := range h.chips {
		if c.Index != i {
			return nil, fmt.Errorf("TPU chips are not accel0..accel%d: %s is accel%d", len(h.chips)-1, c.Address, c.Index)
		}
	}
	return h, nil
}

// readChip reads one IOMMU group member; ok is false for a device that is
// not a TPU chip.
func readChip(dev string, fsys deviceattribute.MachineModifier) (chip, bool, error) {
	read := func(name string) (uint64, error) {
		b, err := os.ReadFile(filepath.Join(dev, name))
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 32)
	}
	addr := filepath.Base(dev)
	vendor, err := read("vendor")
	if err != nil {
		return chip{}, false, fmt.Errorf("read PCI function %s: %w", addr, err)
	}
	if vendor != tpuhw.VendorGoogle {
		return chip{}, false, nil
	}
	id, err := read("device")
	if err != nil {
		return chip{}, false, fmt.Errorf("read PCI function %s: %w", addr, err)
	}
	gen, ok := tpuhw.GenerationForDevice(uint16(id))
	if !ok {
		return chip{}, false, nil // gVNIC, NVMe and other Google functions
	}
	group, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(dev))))
	if err != nil {
		return chip{}, false, fmt.Errorf("PCI function %s: IOMMU group of %s: %w", addr, dev, err)
	}
	accels, err := filepath.Glob(filepath.Join(dev, "accel", "accel*"))
	if err != nil || len(accels) != 1 {
		return chip{}, false, fmt.Errorf("TPU chip %s: want one accel/accel<N>, found %v", addr, accels)
	}
	index, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(accels[0]), "accel"))
	if err != nil {
		return chip{}, false, fmt.Errorf("TPU chip %s: accel device %s: %w", addr, accels[0], err)
	}
	c := chip{Index: index, Address: addr, Generation: gen, IOMMUGroup: group}
	if attr, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(addr, fsys); err == nil && attr.Value.StringValue != nil {
		c.PCIeRoot = *attr.Value.StringValue
	}
	return c, true, nil
}
