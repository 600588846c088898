package render

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
)

// NvidiaCapsMajor is the major of the nvidia-caps character devices
// (/dev/nvidia-caps/nvidia-cap<minor>). The kernel gives the driver a
// dynamic major, counting down from 254 among the majors 234..254, so
// hosts show values such as 235 to 240 depending on what registered first;
// 235 is what a host with driver 595 reported (nvidia-caps 235,
// nvidia-caps-imex-channels 236). Consumers must read it from /proc/devices.
const NvidiaCapsMajor = 235

// migMinorsGPUs is how many GPUs the driver's mig-minors table covers: the
// driver lists every possible entry for GPU minors 0..31 (its largest minor,
// gpu31/gi14/ci7, is 4322; the next dynamic nvidia-caps minor a host hands
// out, e.g. to IMEX channel 0, is 4323). Profiles with higher GPU minors get
// the table extended to cover them.
const migMinorsGPUs = 32

// capFile is a /proc/driver/nvidia/capabilities access file: the device
// node's minor, its mode in decimal and whether the driver may change it.
func capFile(minor int, mode uint32) string {
	return fmt.Sprintf("DeviceFileMinor: %d\nDeviceFileMode: %d\nDeviceFileModify: 1\n", minor, mode)
}

// Modes of the capability device nodes: config is root-only (0400), the
// others world-readable (0444), as nvidia-modprobe creates them.
const (
	capConfigMode = 0o400
	capMode       = 0o444
)

// migMinors is /proc/driver/nvidia-caps/mig-minors: config, monitor, then
// for every GPU minor 0..n-1 each GI's access line followed by its eight CI
// access lines.
func migMinors(topo *profile.Topology) string {
	n := migMinorsGPUs
	for _, g := range topo.GPUs {
		n = max(n, *g.GPU.Minor+1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "config %d\nmonitor %d\n", nvmlstate.ConfigCapMinor, nvmlstate.MonitorCapMinor)
	for g := range n {
		for gi := range nvmlstate.MaxGIID + 1 {
			fmt.Fprintf(&b, "gpu%d/gi%d/access %d\n", g, gi, nvmlstate.GIAccessMinor(g, gi))
			for ci := range nvmlstate.MaxCIID + 1 {
				fmt.Fprintf(&b, "gpu%d/gi%d/ci%d/access %d\n", g, gi, ci, nvmlstate.CIAccessMinor(g, gi, ci))
			}
		}
	}
	return b.String()
}

// migLayouts resolves every GPU's static MIG layout, keyed by GPU minor.
func migLayouts(topo *profile.Topology) (map[int][]gpu.GPUInstance, error) {
	out := map[int][]gpu.GPUInstance{}
	for _, pg := range topo.GPUs {
		gis, err := pg.GPU.MIGLayout()
		if err != nil {
			return nil, fmt.Errorf("GPU %s: %w", pg.Function.Address, err)
		}
		out[*pg.GPU.Minor] = gis
	}
	return out, nil
}

// migProcfs renders the capability files: the config and monitor access
// files, mig-minors, and an access file per created GI and CI.
func migProcfs(w *writer, topo *profile.Topology, layouts map[int][]gpu.GPUInstance) {
	caps := "proc/driver/nvidia/capabilities"
	w.file(filepath.Join(caps, "mig/config"), 0o444, capFile(nvmlstate.ConfigCapMinor, capConfigMode))
	w.file(filepath.Join(caps, "mig/monitor"), 0o444, capFile(nvmlstate.MonitorCapMinor, capMode))
	w.file("proc/driver/nvidia-caps/mig-minors", 0o444, migMinors(topo))
	for _, pg := range topo.GPUs {
		g := *pg.GPU.Minor
		for _, gi := range layouts[g] {
			dir := filepath.Join(caps, fmt.Sprintf("gpu%d/mig/gi%d", g, gi.ID))
			w.file(filepath.Join(dir, "access"), 0o444, capFile(nvmlstate.GIAccessMinor(g, gi.ID), capMode))
			for _, ci := range gi.ComputeInstances {
				w.file(filepath.Join(dir, fmt.Sprintf("ci%d/access", ci.ID)), 0o444,
					capFile(nvmlstate.CIAccessMinor(g, gi.ID, ci.ID), capMode))
			}
		}
	}
}

// migDevfs renders /dev/nvidia-caps: nvidia-cap1 (config) and nvidia-cap2
// (monitor), and a node per created GI and CI.
func migDevfs(w *writer, topo *profile.Topology, layouts map[int][]gpu.GPUInstance) {
	node := func(minor int, mode uint32) {
		w.charDevice(fmt.Sprintf("dev/nvidia-caps/nvidia-cap%d", minor), NvidiaCapsMajor, uint32(minor), os.FileMode(mode))
	}
	node(nvmlstate.ConfigCapMinor, capConfigMode)
	node(nvmlstate.MonitorCapMinor, capMode)
	for _, pg := range topo.GPUs {
		g := *pg.GPU.Minor
		for _, gi := range layouts[g] {
			node(nvmlstate.GIAccessMinor(g, gi.ID), capMode)
			for _, ci := range gi.ComputeInstances {
				node(nvmlstate.CIAccessMinor(g, gi.ID, ci.ID), capMode)
			}
		}
	}
}

// migState adds a GPU's MIG records to s: for a GPU with a mig section, its
// geometry and profile tables, and its static GIs and CIs.
func migState(s *nvmlstate.State, g *gpu.GPU, gis []gpu.GPUInstance) {
	if g.MIG == nil {
		return
	}
	t, ok := gpu.LookupMIGTable(g.Model)
	if !ok {
		return // Validate rejects a mig section without a MIG table
	}
	minor := *g.Minor
	s.MIG = append(s.MIG, nvmlstate.MIG{GPU: minor, MaxDevices: gpu.MaxMIGDevices, MemorySlices: gpu.MIGMemorySlices})
	for _, p := range t.GIProfiles {
		s.GIProfiles = append(s.GIProfiles, nvmlstate.GIProfile{
			GPU: minor, ID: p.ID, Index: p.Index, Name: p.Name, Slices: p.Slices, MemorySlices: p.MemorySlices,
			Instances: p.Instances, MemoryMB: p.MemoryMB, SMs: p.SMs, CopyEngines: p.CopyEngines,
			Decoders: p.Decoders, Encoders: p.Encoders, JPEGs: p.JPEGs, OFAs: p.OFAs, Placements: p.Starts,
		})
		for _, c := range t.CIProfiles(p) {
			s.CIProfiles = append(s.CIProfiles, nvmlstate.CIProfile{
				GPU: minor, GIProfile: p.ID, ID: c.ID, Name: c.Name, Slices: c.Slices,
				Instances: c.Instances, SMs: c.SMs, Placements: c.Starts,
			})
		}
	}
	for _, gi := range gis {
		s.GPUInstances = append(s.GPUInstances, nvmlstate.GPUInstance{
			GPU: minor, ID: gi.ID, Profile: gi.Profile.ID, Start: gi.Start, Size: gi.Profile.MemorySlices,
			CapMinor: nvmlstate.GIAccessMinor(minor, gi.ID),
		})
		for _, ci := range gi.ComputeInstances {
			s.ComputeInstances = append(s.ComputeInstances, nvmlstate.ComputeInstance{
				GPU: minor, GI: gi.ID, ID: ci.ID, Profile: ci.Profile.ID, Start: ci.Start, Size: ci.Profile.Slices,
				UUID: gpu.DeriveMIGUUID(g.UUID, gi.ID, ci.ID), CapMinor: nvmlstate.CIAccessMinor(minor, gi.ID, ci.ID),
			})
		}
	}
}
