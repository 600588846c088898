package render

import (
	"bytes"
	"fmt"
	"path/filepath"

	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/internal/tpuhw"
)

// TPU chips: chip i of spec.tpu.chips (its index on the host) is
// /dev/accel<i> and sits alone in IOMMU group tpuIOMMUGroupBase+i; chips of
// the generations bound to vfio-pci also get /dev/vfio/<group>.
const (
	tpuIOMMUGroupBase = 0
	tpuRevision       = 0x01
	tpuBAR0Size       = 64 << 20
	// vfioMinor is /dev/vfio/vfio's minor under the misc major 10.
	miscMajor = 10
	vfioMinor = 196
)

func tpuIdentity(gen tpuhw.Generation) pciIdentity {
	return pciIdentity{tpuhw.VendorGoogle, uint32(gen.DeviceID), tpuhw.VendorGoogle, uint32(gen.DeviceID),
		tpuhw.ClassProcessingAccelerator, tpuRevision, gen.Driver()}
}

func tpuGeneration(p *profile.Profile) tpuhw.Generation {
	g, _ := tpuhw.LookupGeneration(p.Spec.TPU.Generation) // validated
	return g
}

func tpuIOMMUGroup(index int) int { return tpuIOMMUGroupBase + index }

// tpuClasses renders the driver directory of the chips' driver and the
// class directories the accel subsystem creates.
func (s *tree) tpuClasses() {
	if len(s.topo.TPUChips) == 0 {
		return
	}
	s.w.dir("sys/bus/pci/drivers/" + tpuGeneration(s.p).Driver())
	s.w.dir("sys/class/accel")
	s.w.dir("sys/kernel/iommu_groups")
}

// tpuChip renders a chip's files beyond its PCI function: its IOMMU group
// (the function's iommu_group link and the group's devices/<bdf> link) and
// its accel device (accel/accel<N> with its dev file, /sys/class/accel).
func (s *tree) tpuChip(dir string, fn *profile.PCIFunction) {
	index := s.tpuIndex[fn]
	group := filepath.Join("sys/kernel/iommu_groups", fmt.Sprint(tpuIOMMUGroup(index)))
	s.w.dir(filepath.Join(group, "devices"))
	s.w.file(filepath.Join(group, "type"), 0o444, "DMA\n")
	s.w.link(filepath.Join(group, "devices", fn.Address.String()), dir)
	s.w.link(filepath.Join(dir, "iommu_group"), group)
	name := fmt.Sprintf("accel%d", index)
	adir := filepath.Join(dir, "accel", name)
	s.w.file(filepath.Join(adir, "dev"), 0o444, fmt.Sprintf("%d:%d\n", tpuhw.AccelMajor, index))
	s.w.file(filepath.Join(adir, "uevent"), 0o644, fmt.Sprintf("MAJOR=%d\nMINOR=%d\nDEVNAME=%s\n", tpuhw.AccelMajor, index, name))
	s.w.link(filepath.Join(adir, "device"), dir)
	s.w.link(filepath.Join(adir, "subsystem"), "sys/class/accel")
	s.w.link(filepath.Join("sys/class/accel", name), adir)
}

// tpuDevfs creates the chips' nodes: /dev/accel<N> for every generation
// (so a driver can hand a container the same kind of node whatever the
// generation), and for vfio-bound generations /dev/vfio/<group> and
// /dev/vfio/vfio.
func tpuDevfs(w *writer, p *profile.Profile, topo *profile.Topology) {
	if len(topo.TPUChips) == 0 {
		return
	}
	gen := tpuGeneration(p)
	for _, c := range topo.TPUChips {
		w.charDevice(fmt.Sprintf("dev/accel%d", c.Index), tpuhw.AccelMajor, uint32(c.Index), 0o666)
		if gen.VFIO {
			w.charDevice(fmt.Sprintf("dev/vfio/%d", tpuIOMMUGroup(c.Index)), tpuhw.VFIOGroupMajor, uint32(tpuIOMMUGroup(c.Index)), 0o666)
		}
	}
	if gen.VFIO {
		w.charDevice("dev/vfio/vfio", miscMajor, vfioMinor, 0o666)
	}
}

// tpuHostFacts writes the host's ground truth (tpuhw.HostFile, for the
// kit) and its tpu-env (the metadata server's attribute, for drivers).
func tpuHostFacts(w *writer, p *profile.Profile, topo *profile.Topology) error {
	h := p.Spec.TPU
	if h == nil {
		return nil
	}
	chipBounds, err := tpuhw.ParseBounds(h.ChipBounds)
	if err != nil {
		return fmt.Errorf("TPU chipBounds: %w", err)
	}
	name, topology, worker := "", chipBounds, 0
	if h.Slice != nil {
		if topology, err = tpuhw.ParseBounds(h.Slice.Topology); err != nil {
			return fmt.Errorf("TPU slice topology: %w", err)
		}
		name, worker = h.Slice.Name, h.Slice.WorkerID
	}
	sl, err := tpuhw.NewSlice(topology, chipBounds)
	if err != nil {
		return err
	}
	gen := tpuGeneration(p)
	f := &tpuhw.HostFile{APIVersion: tpuhw.HostFileVersion, Generation: gen.Name, Slice: name,
		Topology: topology.String(), ChipBounds: chipBounds.String(), WorkerID: worker}
	for _, c := range topo.TPUChips {
		at := sl.ChipCoord(worker, c.Index)
		chip := tpuhw.Chip{Index: c.Index, X: at.X, Y: at.Y, Z: at.Z, PCIAddress: c.Function.Address.String(),
			IOMMUGroup: tpuIOMMUGroup(c.Index), Accel: tpuhw.AccelPath(c.Index)}
		if gen.VFIO {
			chip.VFIO = tpuhw.VFIOGroupPath(tpuIOMMUGroup(c.Index))
		}
		f.Chips = append(f.Chips, chip)
	}
	var b bytes.Buffer
	if err := tpuhw.WriteHostFile(&b, f); err != nil {
		return err
	}
	w.atomicFile(tpuhw.HostFileRelativePath, 0o644, b.String())
	w.atomicFile(tpuhw.MetadataTPUEnvRelativePath, 0o644,
		tpuhw.FormatTPUEnv(tpuhw.TPUEnv{Generation: gen.Name, SliceName: name, Slice: sl, WorkerID: worker}))
	return nil
}
