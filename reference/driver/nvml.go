package driver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/klog/v2"
)

// NVMLLibraryName is the file name (SONAME) NVML is loaded by.
const NVMLLibraryName = "libnvidia-ml.so.1"

// nvmlLibraryDirs are searched in order below the driver root, as NVIDIA's
// DRA driver does; the emulator installs the shim in the first.
var nvmlLibraryDirs = []string{
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib64",
	"/usr/lib/aarch64-linux-gnu",
	"/lib64",
	"/lib/x86_64-linux-gnu",
	"/lib/aarch64-linux-gnu",
}

// ErrNVMLNotFound is returned by FindNVMLLibrary when no directory below the
// driver root has libnvidia-ml.so.1.
var ErrNVMLNotFound = errors.New("NVML library not found")

// FindNVMLLibrary returns the host path of the real file behind
// libnvidia-ml.so.1 below driverRoot (symlinks resolved inside driverRoot, so
// an absolute link target means driverRoot/target).
func FindNVMLLibrary(driverRoot string) (string, error) {
	for _, dir := range nvmlLibraryDirs {
		p, err := resolveInRoot(driverRoot, path.Join(dir, NVMLLibraryName))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("resolve %s below %s: %w", path.Join(dir, NVMLLibraryName), driverRoot, err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("stat NVML library %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() {
			return "", fmt.Errorf("NVML library %s is not a regular file", p)
		}
		return p, nil
	}
	return "", fmt.Errorf("%w: no %s in %s below %s", ErrNVMLNotFound, NVMLLibraryName, strings.Join(nvmlLibraryDirs, ", "), driverRoot)
}

// resolveInRoot resolves every symlink on the absolute path p as if root were
// "/" and returns the host path of the result. ".." never leaves root.
func resolveInRoot(root, p string) (string, error) {
	todo := strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	resolved := "/"
	for links := 0; len(todo) > 0; {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, part)
		host := filepath.Join(root, next)
		fi, err := os.Lstat(host)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > 40 {
			return "", fmt.Errorf("too many levels of symbolic links at %s", host)
		}
		target, err := os.Readlink(host)
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			resolved = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return filepath.Join(root, resolved), nil
}

// NVMLDiscoverer discovers GPUs through NVML and reads their PCI topology from
// sysfs.
type NVMLDiscoverer struct {
	// NVML is the library, e.g. nvml.New(nvml.WithLibraryPath(path)).
	NVML nvml.Interface
	// SysfsRoot is the sysfs mount, "/sys" on a real node.
	SysfsRoot string
	// MIGMinorsPath is the NVIDIA driver's capability minor table,
	// /proc/driver/nvidia-caps/mig-minors; read only when a MIG device
	// exists.
	MIGMinorsPath string
	// ListAttributes has discovery read each GPU's GPU.CloseNUMANodes
	// (Config.ListAttributes).
	ListAttributes bool
	// fabricOf reads a GPU's fabric (fabricOf when nil); tests of NVML
	// mocks, whose fabric info handler cannot be faked, set it.
	fabricOf func(nvml.Device) (*Fabric, error)
}

// MIGMinorsPath returns the path of the capability minor table below the
// driver root.
func MIGMinorsPath(driverRoot string) string {
	return filepath.Join(driverRoot, "proc/driver/nvidia-caps/mig-minors")
}

// NewNVMLDiscoverer loads NVML from the driver root (FindNVMLLibrary) and reads
// sysfs below sysfsRoot. It returns the discoverer and the library's host
// path, which CDI specs mount into containers.
func NewNVMLDiscoverer(driverRoot, sysfsRoot string) (*NVMLDiscoverer, string, error) {
	lib, err := FindNVMLLibrary(driverRoot)
	if err != nil {
		return nil, "", err
	}
	return &NVMLDiscoverer{NVML: nvml.New(nvml.WithLibraryPath(lib)), SysfsRoot: sysfsRoot, MIGMinorsPath: MIGMinorsPath(driverRoot)}, lib, nil
}

// Discover initializes NVML, reads every GPU and shuts NVML down again.
func (d *NVMLDiscoverer) Discover(ctx context.Context) (inv *Inventory, err error) {
	logger := klog.FromContext(ctx)
	if ret := d.NVML.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("initialize NVML: %w", ret)
	}
	defer func() {
		if ret := d.NVML.Shutdown(); ret != nvml.SUCCESS && err == nil {
			err = fmt.Errorf("shut NVML down: %w", ret)
		}
	}()

	inv = &Inventory{}
	var ret nvml.Return
	if inv.DriverVersion, ret = d.NVML.SystemGetDriverVersion(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("get driver version: %w", ret)
	}
	if inv.CUDADriverVersion, ret = d.NVML.SystemGetCudaDriverVersion(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("get CUDA driver version: %w", ret)
	}
	count, ret := d.NVML.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("count GPUs: %w", ret)
	}
	for i := range count {
		g, err := d.gpu(ctx, i)
		if errors.Is(err, nvml.ERROR_GPU_IS_LOST) {
			// Fell off the bus before the driver started: not published
			// until a driver restart after the GPU is back.
			logger.Info("Leaving out a lost GPU", "index", i, "err", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		inv.GPUs = append(inv.GPUs, g)
	}
	if _, err := inv.byDeviceName(); err != nil {
		return nil, err
	}
	logger.V(1).Info("Discovered GPUs", "count", len(inv.GPUs), "driverVersion", inv.DriverVersion, "cudaDriverVersion", inv.CUDADriverVersion)
	return inv, nil
}

func (d *NVMLDiscoverer) gpu(ctx context.Context, index int) (GPU, error) {
	logger := klog.FromContext(ctx)
	dev, ret := d.NVML.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		return GPU{}, fmt.Errorf("get handle of GPU %d: %w", index, ret)
	}
	g := GPU{Index: index, NUMANode: -1}
	if g.UUID, ret = dev.GetUUID(); ret != nvml.SUCCESS {
		return GPU{}, fmt.Errorf("get UUID of GPU %d: %w", index, ret)
	}
	if g.ProductName, ret = dev.GetName(); ret != nvml.SUCCESS {
		return GPU{}, fmt.Errorf("get name of GPU %d (%s): %w", index, g.UUID, ret)
	}
	if g.Minor, ret = dev.GetMinorNumber(); ret != nvml.SUCCESS {
		return GPU{}, fmt.Errorf("get minor number of GPU %d (%s): %w", index, g.UUID, ret)
	}
	switch mem, ret := dev.GetMemoryInfo(); ret {
	case nvml.SUCCESS:
		g.MemoryBytes = mem.Total
	case nvml.ERROR_NOT_SUPPORTED: // e.g. integrated GPUs; no memory capacity then
	default:
		return GPU{}, fmt.Errorf("get memory of GPU %d (%s): %w", index, g.UUID, ret)
	}
	arch, ret := dev.GetArchitecture()
	if ret != nvml.SUCCESS {
		return GPU{}, fmt.Errorf("get architecture of GPU %d (%s): %w", index, g.UUID, ret)
	}
	var err error
	if g.Architecture, err = ArchitectureName(arch); err != nil {
		return GPU{}, fmt.Errorf("GPU %d (%s): %w", index, g.UUID, err)
	}
	brand, ret := dev.GetBrand()
	if ret != nvml.SUCCESS {
		return GPU{}, fmt.Errorf("get brand of GPU %d (%s): %w", index, g.UUID, ret)
	}
	if g.Brand, err = BrandName(brand); err != nil {
		return GPU{}, fmt.Errorf("GPU %d (%s): %w", index, g.UUID, err)
	}
	if g.CCMajor, g.CCMinor, ret = dev.GetCudaComputeCapability(); ret != nvml.SUCCESS {
		return GPU{}, fmt.Errorf("get CUDA compute capability of GPU %d (%s): %w", index, g.UUID, ret)
	}
	pci, ret := dev.GetPciInfo()
	if ret != nvml.SUCCESS {
		return GPU{}, fmt.Errorf("get PCI info of GPU %d (%s): %w", index, g.UUID, ret)
	}
	if g.PCIBusID, err = sysfsBusID(cString(pci.BusId[:])); err != nil {
		return GPU{}, fmt.Errorf("GPU %d (%s): %w", index, g.UUID, err)
	}

	fsys := deviceattribute.WithFSFromRoot(d.SysfsRoot)
	if attr, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(g.PCIBusID, fsys); err != nil {
		logger.Info("Warning: publishing GPU without PCIe root", "gpu", g.UUID, "pciBusID", g.PCIBusID, "err", err)
	} else {
		g.PCIeRoot = *attr.Value.StringValue
	}
	if attr, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(g.PCIBusID, deviceattribute.ScalarAttribute, fsys); err != nil {
		logger.Info("Publishing GPU without NUMA node", "gpu", g.UUID, "pciBusID", g.PCIBusID, "reason", err.Error())
	} else {
		g.NUMANode = int(*attr.Value.IntValue)
	}
	if d.ListAttributes && g.NUMANode >= 0 {
		// The list form of the standard numaNode: the function's own node
		// first, then same-socket nodes at the minimum SLIT distance in
		// /sys/devices/system/node/node<N>/distance.
		attr, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(g.PCIBusID, deviceattribute.ListAttribute, fsys)
		if err != nil {
			return GPU{}, fmt.Errorf("GPU %d (%s): read the NUMA nodes close to it: %w", index, g.UUID, err)
		}
		g.CloseNUMANodes = attr.Value.IntValues
	}
	if g.MIG, err = d.migInfo(dev, &g); err != nil {
		return GPU{}, err
	}
	fabric := fabricOf
	if d.fabricOf != nil {
		fabric = d.fabricOf
	}
	if g.Fabric, err = fabric(dev); err != nil {
		return GPU{}, fmt.Errorf("GPU %d (%s): %w", index, g.UUID, err)
	}
	return g, nil
}

// migInfo reads the MIG profiles, placements and existing MIG devices of a
// GPU whose current MIG mode is enabled; nil for any other GPU.
func (d *NVMLDiscoverer) migInfo(dev nvml.Device, g *GPU) (*MIGInfo, error) {
	current, _, ret := dev.GetMigMode()
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_NOT_SUPPORTED: // not MIG capable
		return nil, nil
	default:
		return nil, fmt.Errorf("get MIG mode of GPU %d (%s): %w", g.Index, g.UUID, ret)
	}
	if current != nvml.DEVICE_MIG_ENABLE {
		return nil, nil
	}
	m := &MIGInfo{}
	for idx := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := dev.GetGpuInstanceProfileInfo(idx)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // the GPU has no profile with this index
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("get MIG profile %d of GPU %d (%s): %w", idx, g.Index, g.UUID, ret)
		}
		placements, ret := dev.GetGpuInstancePossiblePlacements(&info)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("get placements of MIG profile %d of GPU %d (%s): %w", info.Id, g.Index, g.UUID, ret)
		}
		m.Profiles = append(m.Profiles, MIGProfile{Index: idx, Info: info, Name: MIGProfileName(idx, info, g.MemoryBytes), Placements: placements})
	}
	max, ret := dev.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("get MIG device count of GPU %d (%s): %w", g.Index, g.UUID, ret)
	}
	var minors map[string]int
	for i := range max {
		mig, ret := dev.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // empty slot
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("get MIG device %d of GPU %d (%s): %w", i, g.Index, g.UUID, ret)
		}
		if minors == nil {
			var err error
			if minors, err = readMIGMinors(d.MIGMinorsPath); err != nil {
				return nil, err
			}
		}
		inst, err := migInstance(dev, mig, g, m.Profiles, minors)
		if err != nil {
			return nil, fmt.Errorf("MIG device %d of GPU %d (%s): %w", i, g.Index, g.UUID, err)
		}
		m.Instances = append(m.Instances, inst)
	}
	return m, nil
}

func migInstance(parent, mig nvml.Device, g *GPU, profiles []MIGProfile, minors map[string]int) (MIGInstance, error) {
	var inst MIGInstance
	var ret nvml.Return
	if inst.UUID, ret = mig.GetUUID(); ret != nvml.SUCCESS {
		return inst, fmt.Errorf("get UUID: %w", ret)
	}
	if inst.GI, ret = mig.GetGpuInstanceId(); ret != nvml.SUCCESS {
		return inst, fmt.Errorf("get GPU instance id of %s: %w", inst.UUID, ret)
	}
	if inst.CI, ret = mig.GetComputeInstanceId(); ret != nvml.SUCCESS {
		return inst, fmt.Errorf("get compute instance id of %s: %w", inst.UUID, ret)
	}
	gi, ret := parent.GetGpuInstanceById(inst.GI)
	if ret != nvml.SUCCESS {
		return inst, fmt.Errorf("get GPU instance %d: %w", inst.GI, ret)
	}
	giInfo, ret := gi.GetInfo()
	if ret != nvml.SUCCESS {
		return inst, fmt.Errorf("get info of GPU instance %d: %w", inst.GI, ret)
	}
	ci, ret := gi.GetComputeInstanceById(inst.CI)
	if ret != nvml.SUCCESS {
		return inst, fmt.Errorf("get compute instance %d of GPU instance %d: %w", inst.CI, inst.GI, ret)
	}
	ciInfo, ret := ci.GetInfo()
	if ret != nvml.SUCCESS {
		return inst, fmt.Errorf("get info of compute instance %d of GPU instance %d: %w", inst.CI, inst.GI, ret)
	}
	i := slices.IndexFunc(profiles, func(p MIGProfile) bool { return p.Info.Id == giInfo.ProfileId })
	if i < 0 {
		return inst, fmt.Errorf("GPU instance %d has profile %d, which NVML does not list", inst.GI, giInfo.ProfileId)
	}
	p := profiles[i]
	inst.ProfileID, inst.Start, inst.Size = int(p.Info.Id), int(giInfo.Placement.Start), int(giInfo.Placement.Size)
	inst.Name = p.Name
	if ciInfo.Placement.Size != p.Info.SliceCount {
		inst.Name = fmt.Sprintf("%dc.%s", ciInfo.Placement.Size, p.Name)
	}
	inst.MemoryBytes = p.Info.MemorySizeMB << 20
	var err error
	if inst.GICapMinor, inst.CICapMinor, err = capMinors(minors, g.Minor, inst.GI, inst.CI); err != nil {
		return inst, err
	}
	return inst, nil
}

// readMIGMinors parses /proc/driver/nvidia-caps/mig-minors: lines
// "<capability path> <minor>", e.g. "gpu0/gi1/access 12".
func readMIGMinors(path string) (map[string]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read MIG capability minors: %w", err)
	}
	out := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("parse %s line %d: want \"<capability> <minor>\", got %q", path, i+1, line)
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("parse %s line %d: minor %q is not a non-negative integer", path, i+1, f[1])
		}
		out[f[0]] = n
	}
	return out, nil
}

// capMinors looks up the access capabilities of GI gi and CI ci of the GPU
// with the given minor.
func capMinors(minors map[string]int, gpuMinor, gi, ci int) (int, int, error) {
	giKey := fmt.Sprintf("gpu%d/gi%d/access", gpuMinor, gi)
	ciKey := fmt.Sprintf("gpu%d/gi%d/ci%d/access", gpuMinor, gi, ci)
	giMinor, ok := minors[giKey]
	if !ok {
		return 0, 0, fmt.Errorf("MIG capability minors list no %s", giKey)
	}
	ciMinor, ok := minors[ciKey]
	if !ok {
		return 0, 0, fmt.Errorf("MIG capability minors list no %s", ciKey)
	}
	return giMinor, ciMinor, nil
}

// cString converts a NUL-terminated C char array.
func cString(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

var sysfsBDF = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// sysfsBusID turns NVML's bus id (00000000:1B:00.0, 8-digit domain, upper
// case) into the name sysfs uses (0000:1b:00.0).
func sysfsBusID(nvmlID string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(nvmlID))
	domain, rest, ok := strings.Cut(s, ":")
	n, err := strconv.ParseUint(domain, 16, 32)
	if !ok || err != nil || n > 0xffff {
		return "", fmt.Errorf("PCI bus id %q is not DOMAIN:BB:DD.F", nvmlID)
	}
	id := fmt.Sprintf("%04x:%s", n, rest)
	if !sysfsBDF.MatchString(id) {
		return "", fmt.Errorf("PCI bus id %q is not DOMAIN:BB:DD.F", nvmlID)
	}
	return id, nil
}
