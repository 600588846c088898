// Package nvmltest gives tests of any package an NVML shim and emulator
// roots for it.
//
// BuildShim builds the shim, and the emulator's nvidia-smi beside it, once
// per test binary (and reuses an earlier build of the same sources from the
// user's cache directory); it needs gcc and the C library's static archive.
// NewRoot makes an emulator root in a test's temporary directory. A process
// loads one NVML library through go-nvml for good (its symbols are bound
// globally), so tests should load the path BuildShim returns and switch
// between roots with $DRAKIT_EMULATOR_ROOT: the shim re-reads the root on the
// first nvmlInit after a full nvmlShutdown.
package nvmltest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvml"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// RootEnv is the environment variable naming the shim's emulator root.
const RootEnv = "DRAKIT_EMULATOR_ROOT"

var build struct {
	once sync.Once
	path string
	err  error
}

// BuildShim returns the path of a shim built from the current sources
// (libnvidia-ml.so.1 in a directory keyed by nvml.SourceDigest), building it
// on the first call in the test binary. The emulator's nvidia-smi lies
// beside it (BuildNvidiaSMI), where render finds it by default. It fails t
// if the build fails.
func BuildShim(t testing.TB) string {
	t.Helper()
	build.once.Do(func() { build.path, build.err = buildCached() })
	if build.err != nil {
		t.Fatalf("build NVML shim and nvidia-smi: %v", build.err)
	}
	return build.path
}

// BuildNvidiaSMI returns the path of the emulator's nvidia-smi built from
// the current sources, beside BuildShim's library.
func BuildNvidiaSMI(t testing.TB) string {
	t.Helper()
	return filepath.Join(filepath.Dir(BuildShim(t)), nvml.NvidiaSMIName)
}

func buildCached() (string, error) {
	base, err := os.UserCacheDir()
	if err == nil {
		base = filepath.Join(base, "drakit", "nvmltest")
		err = os.MkdirAll(base, 0o755)
	}
	if err != nil {
		// No usable cache directory: build into a fresh temporary one.
		if base, err = os.MkdirTemp("", "drakit-nvmltest-"); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(base, nvml.SourceDigest()[:16])
	path := filepath.Join(dir, nvml.SONAME)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, b := range []struct {
		path  string
		build func(context.Context, nvml.BuildOptions) error
	}{
		{path, nvml.BuildShim},
		{filepath.Join(dir, nvml.NvidiaSMIName), nvml.BuildNvidiaSMI},
	} {
		if fi, err := os.Stat(b.path); err == nil && fi.Mode().IsRegular() {
			continue
		}
		opts := nvml.DefaultBuildOptions()
		opts.Output = b.path
		if err := b.build(context.Background(), opts); err != nil {
			return "", err
		}
	}
	return path, nil
}

// SampleState returns a valid state with three GPUs in bus order: two
// MIG-capable H100s (MIG off) on NUMA nodes 0 and 1, and an L4 that is not
// MIG-capable and whose NUMA node is unknown. Minors are 0, 1 and 3.
func SampleState() *nvmlstate.State {
	h100 := nvmlstate.GPU{
		Name: "NVIDIA H100 80GB HBM3", PCIDeviceID: 0x233010DE, PCISubSystemID: 0x16C110DE,
		MemoryTotal: 85520809984, MemoryReserved: 566231040, Architecture: 9, Brand: 2,
		CCMajor: 9, CCMinor: 0, MIGCapable: true,
	}
	g0, g1 := h100, h100
	g0.Minor, g0.UUID, g0.BusID, g0.NUMANode = 0, "GPU-5d8b4c1a-0f3e-4a7b-9c21-3e5f6a7b8c90", "00000000:1B:00.0", 0
	g1.Minor, g1.UUID, g1.BusID, g1.NUMANode = 1, "GPU-a1b2c3d4-e5f6-4718-9a0b-1c2d3e4f5a6b", "00000000:43:00.0", 1
	l4 := nvmlstate.GPU{
		Minor: 3, UUID: "GPU-0f1e2d3c-4b5a-4697-8877-665544332211", Name: "NVIDIA L4",
		BusID: "00000001:C1:1F.7", PCIDeviceID: 0x27B810DE, PCISubSystemID: 0x16CA10DE,
		MemoryTotal: 24152899584, MemoryReserved: 402653184, Architecture: 8, Brand: 2,
		CCMajor: 8, CCMinor: 9, NUMANode: -1,
	}
	return &nvmlstate.State{
		System: nvmlstate.System{DriverVersion: "570.172.08", NVMLVersion: "12.570.172.08", CUDADriverVersion: 12080},
		GPUs:   []nvmlstate.GPU{g0, g1, l4},
	}
}

// NewRoot returns a new emulator root in a temporary directory of t holding
// s as its state file and a device node (a plain file) for every GPU of s.
func NewRoot(t testing.TB, s *nvmlstate.State) string {
	t.Helper()
	root := t.TempDir()
	var buf bytes.Buffer
	if err := nvmlstate.Write(&buf, s); err != nil {
		t.Fatalf("write NVML state: %v", err)
	}
	WriteStateFile(t, root, buf.Bytes())
	for _, g := range s.GPUs {
		CreateDeviceNode(t, root, g.Minor)
	}
	return root
}

// WriteStateFile writes data, well-formed or not, as root's state file, and
// bumps root's generation (nvmlstate.BumpGeneration), as every writer does,
// so clients holding the library see it.
func WriteStateFile(t testing.TB, root string, data []byte) {
	t.Helper()
	path := filepath.Join(root, filepath.FromSlash(nvmlstate.RelativePath))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := nvmlstate.BumpGeneration(root); err != nil {
		t.Fatal(err)
	}
}

// CreateDeviceNode makes <root>/dev/nvidia<minor> exist (as a plain file,
// which is all the shim checks).
func CreateDeviceNode(t testing.TB, root string, minor int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(DeviceNode(root, minor), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// DeviceNode is the path of GPU minor's device node under root.
func DeviceNode(root string, minor int) string {
	return filepath.Join(root, "dev", fmt.Sprintf("nvidia%d", minor))
}

// AddMIG gives GPU minor of s model's MIG geometry and profile tables (as
// the emulator renders them) and turns its MIG mode on. It panics on an
// unknown model or minor: callers pass constants.
func AddMIG(s *nvmlstate.State, minor int, model string) {
	t, ok := gpu.LookupMIGTable(model)
	if !ok {
		panic("nvmltest: no MIG table for model " + model)
	}
	i := slices.IndexFunc(s.GPUs, func(g nvmlstate.GPU) bool { return g.Minor == minor })
	if i < 0 {
		panic(fmt.Sprintf("nvmltest: no GPU with minor %d", minor))
	}
	s.GPUs[i].MIGCapable, s.GPUs[i].MIGMode = true, 1
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
}

// AddInstance adds a GI of GI profile giProfile at start on GPU minor, with
// id gi, and one CI per entry of cis (CI profile ID and start; ids 0, 1, …),
// with the cap minors and MIG UUIDs the emulator derives.
func AddInstance(s *nvmlstate.State, minor, gi, giProfile, start int, cis ...[2]int) {
	i := slices.IndexFunc(s.GIProfiles, func(p nvmlstate.GIProfile) bool { return p.GPU == minor && p.ID == giProfile })
	g := slices.IndexFunc(s.GPUs, func(g nvmlstate.GPU) bool { return g.Minor == minor })
	if i < 0 || g < 0 {
		panic(fmt.Sprintf("nvmltest: no GI profile %d on GPU %d", giProfile, minor))
	}
	s.GPUInstances = append(s.GPUInstances, nvmlstate.GPUInstance{
		GPU: minor, ID: gi, Profile: giProfile, Start: start, Size: s.GIProfiles[i].MemorySlices,
		CapMinor: nvmlstate.GIAccessMinor(minor, gi),
	})
	for id, c := range cis {
		k := slices.IndexFunc(s.CIProfiles, func(p nvmlstate.CIProfile) bool {
			return p.GPU == minor && p.GIProfile == giProfile && p.ID == c[0]
		})
		if k < 0 {
			panic(fmt.Sprintf("nvmltest: no CI profile %d in GI profile %d", c[0], giProfile))
		}
		s.ComputeInstances = append(s.ComputeInstances, nvmlstate.ComputeInstance{
			GPU: minor, GI: gi, ID: id, Profile: c[0], Start: c[1], Size: s.CIProfiles[k].Slices,
			UUID: gpu.DeriveMIGUUID(s.GPUs[g].UUID, gi, id), CapMinor: nvmlstate.CIAccessMinor(minor, gi, id),
		})
	}
}

// MIGSampleState is SampleState with H100 MIG tables on minors 0 and 1, MIG
// on for both, and on minor 1 a 3g.40gb GI (id 1, start 4) with two CIs
// (2c.3g.40gb at 0 and 1c.3g.40gb at 2) and a 1g.10gb GI (id 13, start 2) with its full CI.
func MIGSampleState() *nvmlstate.State {
	s := SampleState()
	AddMIG(s, 0, "H100-80GB-HBM3")
	AddMIG(s, 1, "H100-80GB-HBM3")
	AddInstance(s, 1, 1, 9, 4, [2]int{1, 0}, [2]int{0, 2})
	AddInstance(s, 1, 13, 19, 2, [2]int{0, 0})
	return s
}

// CreateCapNode makes <root>/dev/nvidia-caps/nvidia-cap<minor> exist (as a
// plain file, which is all the shim checks for visibility).
func CreateCapNode(t testing.TB, root string, minor int) {
	t.Helper()
	dir := filepath.Join(root, "dev", "nvidia-caps")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("nvidia-cap%d", minor)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// NewMIGRoot is NewRoot plus the config cap node and a cap node for every GI
// and CI of s, so that every instance is visible.
func NewMIGRoot(t testing.TB, s *nvmlstate.State) string {
	t.Helper()
	root := NewRoot(t, s)
	CreateCapNode(t, root, nvmlstate.ConfigCapMinor)
	for _, g := range s.GPUInstances {
		CreateCapNode(t, root, g.CapMinor)
	}
	for _, c := range s.ComputeInstances {
		CreateCapNode(t, root, c.CapMinor)
	}
	return root
}

// NvidiaSMIList is what the emulator's nvidia-smi -L prints for state s
// with every GPU visible: each GPU in file order (NVML's), and under a GPU
// whose MIG mode is on its MIG devices, the compute instances ordered by GPU
// instance and id, each named by its compute instance profile.
func NvidiaSMIList(s *nvmlstate.State) string {
	var b strings.Builder
	for i, g := range s.GPUs {
		fmt.Fprintf(&b, "GPU %d: %s (UUID: %s)\n", i, g.Name, g.UUID)
		if g.MIGMode != 1 {
			continue
		}
		var cis []nvmlstate.ComputeInstance
		for _, c := range s.ComputeInstances {
			if c.GPU == g.Minor {
				cis = append(cis, c)
			}
		}
		slices.SortFunc(cis, func(x, y nvmlstate.ComputeInstance) int {
			return cmp.Or(cmp.Compare(x.GI, y.GI), cmp.Compare(x.ID, y.ID))
		})
		for k, c := range cis {
			giProfile := -1
			for _, gi := range s.GPUInstances {
				if gi.GPU == g.Minor && gi.ID == c.GI {
					giProfile = gi.Profile
				}
			}
			name := "?"
			for _, p := range s.CIProfiles {
				if p.GPU == g.Minor && p.GIProfile == giProfile && p.ID == c.Profile {
					name = p.Name
				}
			}
			fmt.Fprintf(&b, "  MIG %-11s Device %2d: (UUID: %s)\n", name, k, c.UUID)
		}
	}
	return b.String()
}
