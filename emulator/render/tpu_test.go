package render

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/dynamic-resource-allocation/deviceattribute"

	"drakit.dev/drakit/internal/tpuhw"
)

// sysTPU is what the upstream TPU DRA driver reads of a chip: the vfio
// group's device (vendor, device, subsystem_device), plus the accel class
// entry, the device nodes and the pcieRoot and NUMA node drivers derive.
type sysTPU struct {
	Group, Address, Vendor, Device, SubDevice, Driver string
	Accel, PCIeRoot                                   string
	NUMANode                                          int64
}

func readTPUs(t *testing.T, root string) []sysTPU {
	t.Helper()
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(string(b), "\n")
	}
	sys := filepath.Join(root, "sys")
	fsys := deviceattribute.WithFSFromRoot(sys)
	devs, err := filepath.Glob(filepath.Join(sys, "kernel/iommu_groups/*/devices/*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []sysTPU
	for _, d := range devs {
		group := filepath.Base(filepath.Dir(filepath.Dir(d)))
		addr := filepath.Base(d)
		drv, err := os.Readlink(filepath.Join(d, "driver"))
		if err != nil {
			t.Fatal(err)
		}
		back, err := filepath.EvalSymlinks(filepath.Join(d, "iommu_group"))
		if err != nil || filepath.Base(back) != group {
			t.Errorf("%s: iommu_group resolves to %s, %v; want group %s", addr, back, err, group)
		}
		accels, _ := filepath.Glob(filepath.Join(d, "accel", "accel*"))
		tp := sysTPU{Group: group, Address: addr, Vendor: read(filepath.Join(d, "vendor")), Device: read(filepath.Join(d, "device")),
			SubDevice: read(filepath.Join(d, "subsystem_device")), Driver: filepath.Base(drv)}
		if len(accels) == 1 {
			tp.Accel = filepath.Base(accels[0])
			classDev, err := filepath.EvalSymlinks(filepath.Join(sys, "class/accel", tp.Accel, "device"))
			if err != nil || filepath.Base(classDev) != addr {
				t.Errorf("/sys/class/accel/%s/device resolves to %s, %v; want %s", tp.Accel, classDev, err, addr)
			}
		}
		rootAttr, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(addr, fsys)
		if err != nil {
			t.Fatal(err)
		}
		tp.PCIeRoot = *rootAttr.Value.StringValue
		numa, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(addr, deviceattribute.ScalarAttribute, fsys)
		if err == nil && numa.Value.IntValue != nil {
			tp.NUMANode = *numa.Value.IntValue
		}
		out = append(out, tp)
	}
	return out
}

func charDev(t *testing.T, path string) (major, minor uint32) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		t.Fatalf("%s is not a character device", path)
	}
	return unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev))
}

func TestTPUHostReadBack(t *testing.T) {
	requireMknod(t)
	t.Parallel()
	root := render(t, loadProfile(t, "tpu-v5p-host"), Options{})
	got := readTPUs(t, root)
	want := []sysTPU{
		{"0", "0000:05:00.0", "0x1ae0", "0x0062", "0x0062", "vfio-pci", "accel0", "pci0000:00", 0},
		{"1", "0000:06:00.0", "0x1ae0", "0x0062", "0x0062", "vfio-pci", "accel1", "pci0000:00", 0},
		{"2", "0000:85:00.0", "0x1ae0", "0x0062", "0x0062", "vfio-pci", "accel2", "pci0000:80", 1},
		{"3", "0000:86:00.0", "0x1ae0", "0x0062", "0x0062", "vfio-pci", "accel3", "pci0000:80", 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("chips read back:\n got %+v\nwant %+v", got, want)
	}
	for i := range 4 {
		if ma, mi := charDev(t, filepath.Join(root, "dev", "accel"+string(rune('0'+i)))); ma != tpuhw.AccelMajor || mi != uint32(i) {
			t.Errorf("/dev/accel%d is %d:%d", i, ma, mi)
		}
		if ma, mi := charDev(t, filepath.Join(root, "dev/vfio", string(rune('0'+i)))); ma != tpuhw.VFIOGroupMajor || mi != uint32(i) {
			t.Errorf("/dev/vfio/%d is %d:%d", i, ma, mi)
		}
	}
	charDev(t, filepath.Join(root, "dev/vfio/vfio"))
	data, err := os.ReadFile(filepath.Join(root, tpuhw.HostFileRelativePath))
	if err != nil {
		t.Fatal(err)
	}
	f, err := tpuhw.ReadHostFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Topology != "2x2x1" || f.Slice != "" || f.WorkerID != 0 || len(f.Chips) != 4 ||
		f.Chips[3].Coord() != (tpuhw.Coord{X: 1, Y: 1}) || f.Chips[2].VFIO != "/dev/vfio/2" || f.Chips[2].PCIAddress != "0000:85:00.0" {
		t.Errorf("host file: %+v", f)
	}
	env, err := os.ReadFile(filepath.Join(root, tpuhw.MetadataTPUEnvRelativePath))
	if err != nil {
		t.Fatal(err)
	}
	e, err := tpuhw.ParseTPUEnv(string(env))
	if err != nil || e.Generation != "v5p" || e.Slice.Topology != (tpuhw.Bounds{X: 2, Y: 2, Z: 1}) || e.WorkerID != 0 {
		t.Errorf("tpu-env %+v, %v", e, err)
	}
}

// TestTPUSliceHost renders worker 3 of a 2x2x4 slice: its chips sit at
// z=3 in the ground truth and tpu-env names the slice.
func TestTPUSliceHost(t *testing.T) {
	requireMknod(t)
	t.Parallel()
	root := render(t, loadProfile(t, "../profile/testdata/valid-tpu.yaml"), Options{})
	data, err := os.ReadFile(filepath.Join(root, tpuhw.HostFileRelativePath))
	if err != nil {
		t.Fatal(err)
	}
	f, err := tpuhw.ReadHostFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Slice != "torus-a" || f.Topology != "2x2x4" || f.WorkerID != 3 {
		t.Fatalf("host file %+v", f)
	}
	for i, c := range f.Chips {
		if want := (tpuhw.Coord{X: i % 2, Y: i / 2, Z: 3}); c.Coord() != want {
			t.Errorf("chip %d at %s, want %s", i, c.Coord(), want)
		}
	}
	env, err := os.ReadFile(filepath.Join(root, tpuhw.MetadataTPUEnvRelativePath))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := tpuhw.ParseTPUEnv(string(env)); err != nil || e.SliceName != "torus-a" || e.WorkerID != 3 || e.Slice.Hosts() != 4 {
		t.Errorf("tpu-env %+v, %v", e, err)
	}
	if len(readTPUs(t, root)) != 4 {
		t.Error("want 4 chips in iommu groups")
	}
}

// TestTPUv4 renders a v4 host: accel nodes, no vfio nodes.
func TestTPUv4(t *testing.T) {
	requireMknod(t)
	t.Parallel()
	root := render(t, loadProfile(t, "../profile/testdata/valid-tpu-defaulted.yaml"), Options{})
	got := readTPUs(t, root)
	if len(got) != 8 {
		t.Fatalf("%d chips, want 8", len(got))
	}
	for _, c := range got {
		if c.Device != "0x005e" || c.Driver != tpuhw.DriverAccel {
			t.Errorf("chip %s: device %s driver %s", c.Address, c.Device, c.Driver)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "dev/vfio")); !os.IsNotExist(err) {
		t.Errorf("v4 host has /dev/vfio: %v", err)
	}
	charDev(t, filepath.Join(root, "dev/accel7"))
}
