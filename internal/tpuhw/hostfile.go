package tpuhw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// HostFileRelativePath is where the emulator writes a host's ground truth,
// below its root: <root>/run/drakit-emulator/tpu.json.
const HostFileRelativePath = "run/drakit-emulator/tpu.json"

// HostFileVersion is the apiVersion of the file's current format.
const HostFileVersion = "tpu.emulator.drakit.dev/v1"

// ErrHostFile is wrapped by the errors of ReadHostFile.
var ErrHostFile = errors.New("invalid TPU host file")

// HostFile is the ground truth of one emulated TPU host: its slice and
// where each of its chips sits in the torus. The emulator writes it; the kit
// reads it to map the device nodes a container sees to torus coordinates
// without trusting a driver's attributes.
type HostFile struct {
	APIVersion string `json:"apiVersion"`
	Generation string `json:"generation"`
	// Slice is the slice name; empty for a single-host slice.
	Slice string `json:"slice,omitempty"`
	// Topology is the slice's torus, "4x4x4"; ChipBounds for a single host.
	Topology string `json:"topology"`
	// ChipBounds is the host's box of chips, "2x2x1".
	ChipBounds string `json:"chipBounds"`
	WorkerID   int    `json:"workerID"`
	Chips      []Chip `json:"chips"`
}

// Chip is one chip of a HostFile.
type Chip struct {
	// Index is the chip's index on its host (x, then y, then z within the
	// host's box), N in /dev/accel<N>.
	Index int `json:"index"`
	X     int `json:"x"`
	Y     int `json:"y"`
	Z     int `json:"z"`
	// PCIAddress is the chip's PCI function, "0000:41:00.0".
	PCIAddress string `json:"pciAddress"`
	// IOMMUGroup is the chip's /sys/kernel/iommu_groups entry.
	IOMMUGroup int `json:"iommuGroup"`
	// Accel is /dev/accel<Index> (every generation in the emulator).
	Accel string `json:"accel"`
	// VFIO is /dev/vfio/<IOMMUGroup> for the generations bound to
	// vfio-pci; empty otherwise.
	VFIO string `json:"vfio,omitempty"`
}

// Coord is the chip's torus coordinate.
func (c Chip) Coord() Coord { return Coord{c.X, c.Y, c.Z} }

// WriteHostFile writes f as indented JSON.
func WriteHostFile(w io.Writer, f *HostFile) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode TPU host file: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadHostFile decodes a host file strictly (unknown fields are errors)
// and checks it: version, generation, bounds, and each chip's coordinate
// against its index.
func ReadHostFile(data []byte) (*HostFile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f HostFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHostFile, err)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Validate checks the file's fields and that every chip sits where its
// index on worker WorkerID says.
func (f *HostFile) Validate() error {
	var errs []error
	if f.APIVersion != HostFileVersion {
		errs = append(errs, fmt.Errorf("apiVersion %q: want %q", f.APIVersion, HostFileVersion))
	}
	if _, ok := LookupGeneration(f.Generation); !ok {
		errs = append(errs, fmt.Errorf("generation %q: want one of %v", f.Generation, GenerationNames()))
	}
	s, err := f.SliceGeometry()
	if err != nil {
		errs = append(errs, err)
	} else {
		if f.WorkerID < 0 || f.WorkerID >= s.Hosts() {
			errs = append(errs, fmt.Errorf("workerID %d: want 0..%d", f.WorkerID, s.Hosts()-1))
		} else if len(f.Chips) != s.ChipBounds.Chips() {
			errs = append(errs, fmt.Errorf("chips: %d, want %d (chipBounds %s)", len(f.Chips), s.ChipBounds.Chips(), s.ChipBounds))
		} else {
			for i, c := range f.Chips {
				if c.Index != i {
					errs = append(errs, fmt.Errorf("chips[%d].index %d: want %d", i, c.Index, i))
				} else if want := s.ChipCoord(f.WorkerID, i); c.Coord() != want {
					errs = append(errs, fmt.Errorf("chips[%d]: at %s, want %s", i, c.Coord(), want))
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrHostFile, errors.Join(errs...))
	}
	return nil
}

// SliceGeometry parses the file's topology and chip bounds.
func (f *HostFile) SliceGeometry() (Slice, error) {
	topo, err := ParseBounds(f.Topology)
	if err != nil {
		return Slice{}, fmt.Errorf("topology: %w", err)
	}
	chip, err := ParseBounds(f.ChipBounds)
	if err != nil {
		return Slice{}, fmt.Errorf("chipBounds: %w", err)
	}
	return NewSlice(topo, chip)
}

// ChipByDevice returns the chip whose accel or vfio node is path.
func (f *HostFile) ChipByDevice(path string) (Chip, bool) {
	for _, c := range f.Chips {
		if c.Accel == path || (c.VFIO != "" && c.VFIO == path) {
			return c, true
		}
	}
	return Chip{}, false
}
