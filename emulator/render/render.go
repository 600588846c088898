package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/klog/v2"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
)

// LibraryDir is where the NVML shim is installed below the root.
const LibraryDir = "usr/lib/x86_64-linux-gnu"

// NvidiaSMIPath is where nvidia-smi (Options.NvidiaSMI) is installed below
// the root: the first of the directories NVIDIA's GPU kubelet plugin
// searches in its driver root (after the root itself and /opt/bin) that a
// driver installs it in.
const NvidiaSMIPath = "usr/bin/nvidia-smi"

// Render writes the node described by p under opts.Root (see the package
// documentation for the layout). p must be defaulted (profile.Load and
// profile.Builtin return defaulted profiles); it is validated here.
//
// Render owns the whole root: it refuses a non-empty directory without
// MarkerFile (ErrNotOwned), a symbolic link, and a root with a mount point
// below it (ErrMountPoint), before it changes anything. It writes the new
// tree into a staging directory inside the root and then swaps it in for
// the previous tree, so rendering the same root again converges on exactly
// the profile's tree, and a render that fails (a full disk: errors.Is
// syscall.ENOSPC) leaves the previous root as it was, or no root where there
// was none. Readers should not use the root while the swap runs. Creating
// the device nodes needs root or CAP_MKNOD (ErrDeviceNodes).
func Render(ctx context.Context, p *profile.Profile, opts Options) error {
	opts.Default()
	if err := opts.Validate(); err != nil {
		return err
	}
	topo, err := p.Topology()
	if err != nil {
		return fmt.Errorf("render profile %s: %w", p.Metadata.Name, err)
	}
	layouts, err := migLayouts(topo)
	if err != nil {
		return fmt.Errorf("render profile %s: %w", p.Metadata.Name, err)
	}
	state, err := nvmlState(p, topo, layouts)
	if err != nil {
		return fmt.Errorf("render profile %s: %w", p.Metadata.Name, err)
	}
	sys, err := newTree(p, topo)
	if err != nil {
		return fmt.Errorf("render profile %s: %w", p.Metadata.Name, err)
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return fmt.Errorf("resolve emulator root %s: %w", opts.Root, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := claimRoot(root)
	if err != nil {
		return err
	}
	w := &writer{root: t.staging()}
	sys.render(w)
	devfs(w, topo)
	migDevfs(w, topo, layouts)
	tpuDevfs(w, p, topo)
	if err := tpuHostFacts(w, p, topo); err != nil && w.err == nil {
		w.err = err
	}
	imexDevfs(w, p, topo)
	procfs(w, p, topo)
	migProcfs(w, topo, layouts)
	imexProcfs(w, p, topo)
	w.atomicFile(nvmlstate.RelativePath, 0o644, state)
	if w.err == nil {
		if err := nvmlstate.BumpGeneration(w.root); err != nil {
			w.err = err
		}
	}
	if opts.ShimLibrary != "" {
		lib := "libnvidia-ml.so." + p.Spec.Driver.DriverVersion
		w.copyFile(filepath.Join(LibraryDir, lib), 0o755, opts.ShimLibrary)
		w.symlink(filepath.Join(LibraryDir, "libnvidia-ml.so.1"), lib)
	}
	if opts.NvidiaSMI != "" {
		w.copyFile(NvidiaSMIPath, 0o755, opts.NvidiaSMI)
	}
	if w.err == nil {
		w.err = t.swap()
	}
	if w.err != nil {
		return t.abort(fmt.Errorf("render profile %s into %s: %w", p.Metadata.Name, root, w.err))
	}
	if err := retireGeneration(filepath.Join(root, previousDir)); err != nil {
		return fmt.Errorf("render profile %s into %s: the new tree is in place, but: %w", p.Metadata.Name, root, err)
	}
	if err := t.removePrevious(); err != nil {
		return fmt.Errorf("render profile %s into %s: the new tree is in place, but: %w", p.Metadata.Name, root, err)
	}
	klog.FromContext(ctx).V(1).Info("Rendered emulator root", "root", root, "profile", p.Metadata.Name,
		"gpus", len(topo.GPUs), "shimLibrary", opts.ShimLibrary, "nvidiaSMI", opts.NvidiaSMI)
	return nil
}

// nvmlState builds the NVML state file: the GPUs in PCI address order, the
// MIG records of the GPUs with a mig section, then the NVLink, fabric and
// peer records (nvlinkState).
func nvmlState(p *profile.Profile, topo *profile.Topology, layouts map[int][]gpu.GPUInstance) (string, error) {
	d := p.Spec.Driver
	s := &nvmlstate.State{System: nvmlstate.System{
		DriverVersion:     d.DriverVersion,
		NVMLVersion:       fmt.Sprintf("%d.%s", d.CUDADriverVersion/1000, d.DriverVersion),
		CUDADriverVersion: d.CUDADriverVersion,
	}}
	for _, pg := range topo.GPUs {
		g := pg.GPU
		arch, _ := g.Architecture.NVML()
		brand, _ := g.Brand.NVML()
		ccMajor, ccMinor, _ := strings.Cut(g.ComputeCapability, ".")
		major, err := strconv.Atoi(ccMajor)
		if err != nil {
			return "", fmt.Errorf("GPU %s: compute capability %q: %w", pg.Function.Address, g.ComputeCapability, err)
		}
		minor, err := strconv.Atoi(ccMinor)
		if err != nil {
			return "", fmt.Errorf("GPU %s: compute capability %q: %w", pg.Function.Address, g.ComputeCapability, err)
		}
		s.GPUs = append(s.GPUs, nvmlstate.GPU{
			Minor:          *g.Minor,
			UUID:           g.UUID,
			Name:           g.Name,
			BusID:          pg.Function.Address.NVMLBusID(),
			PCIDeviceID:    uint32(g.DeviceID)<<16 | uint32(g.VendorID),
			PCISubSystemID: uint32(g.SubsystemDeviceID)<<16 | uint32(g.SubsystemVendorID),
			MemoryTotal:    uint64(g.Memory.Value()),
			MemoryReserved: uint64(g.MemoryReserved.Value()),
			Architecture:   arch,
			Brand:          brand,
			CCMajor:        major,
			CCMinor:        minor,
			NUMANode:       pg.HostBridge.NUMANode,
			MIGCapable:     *g.MIGCapable,
			MIGMode:        migMode(g),
		})
		migState(s, g, layouts[*g.Minor])
	}
	nvlinkState(s, p, topo)
	var b bytes.Buffer
	if err := nvmlstate.Write(&b, s); err != nil {
		return "", fmt.Errorf("write NVML state: %w", err)
	}
	return b.String(), nil
}

func migMode(g *gpu.GPU) int {
	if g.MIG != nil && g.MIG.Mode == gpu.MIGEnabled {
		return 1
	}
	return 0
}

func sortedCopy(s []int) []int {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// retireGeneration bumps the generation file of the tree the render replaced
// (under prev), if it had one: NVML clients map that file, so the bump makes
// them reread, and rereading they find the new root's state and generation
// file.
func retireGeneration(prev string) error {
	if _, err := os.Stat(filepath.Join(prev, nvmlstate.GenerationRelativePath)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return nvmlstate.BumpGeneration(prev)
}
