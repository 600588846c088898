package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/internal/nichw"
)

// NVIDIA's character device numbers.
const (
	NvidiaMajor    = 195
	NvidiactlMinor = 255
)

// ErrDeviceNodes is returned when the device nodes cannot be created because
// mknod is not permitted (not root, no CAP_MKNOD).
var ErrDeviceNodes = errors.New("cannot create device nodes")

// charDevice creates rel as a character device major:minor with mode.
func (w *writer) charDevice(rel string, major, minor uint32, mode os.FileMode) {
	w.dir(filepath.Dir(rel))
	if w.err != nil {
		return
	}
	path := filepath.Join(w.root, rel)
	node := fmt.Sprintf("%s (%d:%d)", rel, major, minor)
	err := unix.Mknod(path, unix.S_IFCHR|uint32(mode.Perm()), int(unix.Mkdev(major, minor)))
	switch {
	case errors.Is(err, unix.EPERM):
		w.fail("create character device", node, fmt.Errorf("%w: mknod needs root or CAP_MKNOD: %v", ErrDeviceNodes, err))
		return
	case err != nil:
		w.fail("create character device", node, err)
		return
	}
	if err := os.Chmod(path, mode); err != nil {
		w.fail("chmod", rel, err)
	}
}

// devfs renders R/dev: /dev/nvidia<minor> per GPU and /dev/nvidiactl, all
// crw-rw-rw- as the NVIDIA driver creates them.
func devfs(w *writer, topo *profile.Topology) {
	for _, g := range topo.GPUs {
		w.charDevice(fmt.Sprintf("dev/nvidia%d", *g.GPU.Minor), NvidiaMajor, uint32(*g.GPU.Minor), 0o666)
	}
	w.charDevice("dev/nvidiactl", NvidiaMajor, NvidiactlMinor, 0o666)
}

// procDevices is R/proc/devices in the kernel's "%3d %s" format: a typical
// server's character devices with the NVIDIA driver loaded, then the block
// devices. Consumers (the NVIDIA DRA driver's GetDeviceMajor) look for
// "<major> <name>\n" between "Character devices:" and "Block devices:".
// procDevicesFor adds ib_uverbs' majors on a node with RDMA NICs.
// procDevicesFor adds the IMEX channels' major with imex.
var procDevices = procDevicesFor(false, false)

func procDevicesFor(rdma, imex bool) string {
	uverbs := func(major int) []string {
		if !rdma {
			return nil
		}
		return []string{fmt.Sprintf("%3d %s", major, nichw.UverbsProcName)}
	}
	return strings.Join(slices.Concat([]string{
		"Character devices:",
		"  1 mem",
		"  4 /dev/vc/0",
		"  4 tty",
		"  4 ttyS",
		"  5 /dev/tty",
		"  5 /dev/console",
		"  5 /dev/ptmx",
		"  7 vcs",
		" 10 misc",
		" 13 input",
		" 21 sg",
		" 29 fb",
		"128 ptm",
		"136 pts",
		"180 usb",
		"189 usb_device",
		fmt.Sprintf("%3d nvidia-frontend", NvidiaMajor),
		fmt.Sprintf("%3d nvidia", NvidiaMajor),
		"226 drm"}, uverbs(nichw.UverbsMajor), []string{
		fmt.Sprintf("%3d nvidia-caps", NvidiaCapsMajor)}, imexMajor(imex), uverbs(nichw.UverbsDynamicMajor), []string{
		"",
		"Block devices:",
		"  7 loop",
		"  8 sd",
		"  9 md",
		" 11 sr",
		" 65 sd",
		"253 device-mapper",
		"254 mdp",
		"259 blkext",
		"",
	}), "\n")
}

// procfs renders R/proc/devices and R/proc/driver/nvidia.
func procfs(w *writer, p *profile.Profile, topo *profile.Topology) {
	w.file("proc/devices", 0o444, procDevicesFor(hasRDMA(topo), imexChannels(p) > 0))
	w.file("proc/driver/nvidia/version", 0o444, fmt.Sprintf(
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Thu Jan  1 00:00:00 UTC 1970\n"+
			"GCC version:  gcc version 12.3.0 (drakit emulator)\n", p.Spec.Driver.DriverVersion))
	for i, g := range topo.GPUs {
		bdf := g.Function.Address.String()
		dma := dmaBits(g.GPU.Architecture)
		w.file(filepath.Join("proc/driver/nvidia/gpus", bdf, "information"), 0o444, fmt.Sprintf(
			"Model: \t\t %s\n"+
				"IRQ:   \t\t %d\n"+
				"GPU UUID: \t %s\n"+
				"Video BIOS: \t %s\n"+
				"Bus Type: \t PCIe\n"+
				"DMA Size: \t %d bits\n"+
				"DMA Mask: \t 0x%x\n"+
				"Bus Location: \t %s\n"+
				"Device Minor: \t %d\n"+
				"GPU Excluded:\t No\n",
			g.GPU.Name, firstIRQ+i, g.GPU.UUID, g.GPU.VBIOSVersion, dma, uint64(1)<<dma-1, bdf, *g.GPU.Minor))
	}
}

// firstIRQ is the interrupt line of the first GPU; the others follow.
const firstIRQ = 300

// dmaBits is the DMA address width the driver reports: 52 bits from Hopper
// on, 47 before.
func dmaBits(a gpu.Architecture) int {
	v, _ := a.NVML()
	hopper, _ := gpu.Architecture("Hopper").NVML()
	if v >= hopper {
		return 52
	}
	return 47
}
