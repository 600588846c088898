package sriov_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	"k8s.io/dynamic-resource-allocation/deviceattribute"

	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
	"drakit.dev/drakit/emulator/sriov"
)

const (
	cx7   = "0000:13:00.0" // ConnectX-7, RDMA, 16 VFs at offset 1
	cx7b  = "0000:14:00.0"
	e810  = "0000:20:00.0" // E810-C, 128 VFs at offset 8, link down
	plain = "0000:30:00.0" // no SR-IOV
	gpu   = "0000:12:00.0"
)

// renderNode renders testdata/node.yaml into a new root.
func renderNode(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "probe")
	if err := unix.Mknod(path, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("rendering needs mknod (root or CAP_MKNOD): %v", err)
	}
	p, err := profile.Load("testdata/node.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := render.Render(context.Background(), p, render.Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	return root
}

// tree lists every entry below root with link targets, file contents and
// device numbers, for comparing whole trees.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			out = append(out, rel+" -> "+target)
		case fi.Mode()&fs.ModeCharDevice != 0:
			rdev := fi.Sys().(*syscall.Stat_t).Rdev
			out = append(out, fmt.Sprintf("%s c %d:%d %v", rel, unix.Major(rdev), unix.Minor(rdev), fi.Mode().Perm()))
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(path)
			out = append(out, fmt.Sprintf("%s %v %q", rel, fi.Mode().Perm(), b))
		default:
			out = append(out, rel+"/")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// vf is what a driver reads of a VF, from the PF's virtfn links.
type vf struct {
	Address, Class, Vendor, Device, Driver, PhysFn, PCIeRoot string
	NUMANode                                                 int64
	Interface, MAC, Operstate, Speed, RDMA, Uverbs           string
}

// readVFs reads a PF's VFs as dra-driver-sriov lists them: readdir of the
// PF for virtfn<i> links, then each VF's files, netdev and RDMA device.
func readVFs(t *testing.T, root, pf string) []vf {
	t.Helper()
	sys := filepath.Join(root, "sys")
	fsys := deviceattribute.WithFSFromRoot(sys)
	dev := filepath.Join(sys, "bus/pci/devices", pf)
	var out []vf
	for i := 0; ; i++ {
		link := filepath.Join(dev, fmt.Sprintf("virtfn%d", i))
		target, err := filepath.EvalSymlinks(link)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		v := vf{Address: filepath.Base(target), Class: read(t, filepath.Join(target, "class")),
			Vendor: read(t, filepath.Join(target, "vendor")), Device: read(t, filepath.Join(target, "device"))}
		drv, _ := os.Readlink(filepath.Join(target, "driver"))
		v.Driver = filepath.Base(drv)
		physfn, _ := filepath.EvalSymlinks(filepath.Join(target, "physfn"))
		v.PhysFn = filepath.Base(physfn)
		if bus, err := filepath.EvalSymlinks(filepath.Join(sys, "bus/pci/devices", v.Address)); err != nil || bus != target {
			t.Errorf("/sys/bus/pci/devices/%s -> %s, %v; want %s", v.Address, bus, err, target)
		}
		r, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(v.Address, fsys)
		if err != nil {
			t.Fatal(err)
		}
		v.PCIeRoot = *r.Value.StringValue
		numa, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(v.Address, deviceattribute.ScalarAttribute, fsys)
		if err != nil {
			t.Fatal(err)
		}
		v.NUMANode = *numa.Value.IntValue
		nets, _ := os.ReadDir(filepath.Join(target, "net"))
		if len(nets) == 1 {
			v.Interface = nets[0].Name()
			cls := filepath.Join(sys, "class/net", v.Interface)
			v.MAC, v.Operstate, v.Speed = read(t, filepath.Join(cls, "address")), read(t, filepath.Join(cls, "operstate")), read(t, filepath.Join(cls, "speed"))
		}
		if ib, _ := os.ReadDir(filepath.Join(target, "infiniband")); len(ib) == 1 {
			v.RDMA = ib[0].Name()
			verbs, _ := os.ReadDir(filepath.Join(target, "infiniband_verbs"))
			v.Uverbs = verbs[0].Name() + " " + read(t, filepath.Join(target, "infiniband_verbs", verbs[0].Name(), "dev"))
			var st syscall.Stat_t
			if err := syscall.Stat(filepath.Join(root, "dev/infiniband", verbs[0].Name()), &st); err != nil ||
				fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)) != strings.Fields(v.Uverbs)[1] {
				t.Errorf("/dev/infiniband/%s: %v", verbs[0].Name(), err)
			}
		}
		out = append(out, v)
	}
	if got := read(t, filepath.Join(dev, "sriov_numvfs")); got != fmt.Sprint(len(out)) {
		t.Errorf("%s: sriov_numvfs %s, %d virtfn links", pf, got, len(out))
	}
	return out
}

func TestSetNumVFsCreatesAndRemoves(t *testing.T) {
	t.Parallel()
	root := renderNode(t)
	fresh := tree(t, root)
	pfMAC := read(t, filepath.Join(root, "sys/bus/pci/devices", cx7, "net/enp19s0np0/address"))
	if err := sriov.SetNumVFs(root, cx7, 3); err != nil {
		t.Fatal(err)
	}
	// The render numbered the two ConnectX-7 PFs' RDMA devices mlx5_0 and
	// mlx5_1 (uverbs0, uverbs1) and the four PFs' interfaces 2..5: the VFs
	// take the next numbers.
	want := []vf{
		{"0000:13:00.1", "0x020000", "0x15b3", "0x101e", "mlx5_core", cx7, "pci0000:00", 0, "enp19s0f1", sriov.DeriveVFMAC(pfMAC, 0), "up", "400000", "mlx5_2", "uverbs2 231:194"},
		{"0000:13:00.2", "0x020000", "0x15b3", "0x101e", "mlx5_core", cx7, "pci0000:00", 0, "enp19s0f2", sriov.DeriveVFMAC(pfMAC, 1), "up", "400000", "mlx5_3", "uverbs3 231:195"},
		{"0000:13:00.3", "0x020000", "0x15b3", "0x101e", "mlx5_core", cx7, "pci0000:00", 0, "enp19s0f3", sriov.DeriveVFMAC(pfMAC, 2), "up", "400000", "mlx5_4", "uverbs4 231:196"},
	}
	if diff := cmp.Diff(want, readVFs(t, root, cx7)); diff != "" {
		t.Errorf("VFs (-want +got):\n%s", diff)
	}
	ifindexes := map[string]bool{}
	for _, n := range []string{"enp19s0np0", "enp20s0np0", "enp32s0np0", "enp48s0np0", "enp19s0f1", "enp19s0f2", "enp19s0f3"} {
		ifindexes[read(t, filepath.Join(root, "sys/class/net", n, "ifindex"))] = true
	}
	if len(ifindexes) != 7 {
		t.Errorf("interface indexes repeat: %v", ifindexes)
	}

	// The same count again changes nothing.
	with3 := tree(t, root)
	if err := sriov.SetNumVFs(root, cx7, 3); err != nil {
		t.Errorf("writing the current count: %v", err)
	}
	if diff := cmp.Diff(with3, tree(t, root)); diff != "" {
		t.Errorf("writing the current count changed the tree:\n%s", diff)
	}
	// 0 removes every VF: the tree is the rendered one again.
	if err := sriov.SetNumVFs(root, cx7, 0); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fresh, tree(t, root)); diff != "" {
		t.Errorf("after 3 → 0 the tree differs from the rendered one (-rendered +now):\n%s", diff)
	}
}

func TestSetNumVFsE810(t *testing.T) {
	t.Parallel()
	root := renderNode(t)
	if err := sriov.SetNumVFs(root, e810, 128); err != nil {
		t.Fatal(err)
	}
	vfs := readVFs(t, root, e810)
	if len(vfs) != 128 {
		t.Fatalf("%d VFs, want 128", len(vfs))
	}
	// Offset 8: the first VF is 01.0, the last 10.7; bound to iavf, no RDMA,
	// the PF's link (down) and no speed.
	first, last := vfs[0], vfs[127]
	if first.Address != "0000:20:01.0" || last.Address != "0000:20:10.7" || first.Interface != "enp32s1" || last.Interface != "enp32s16f7" {
		t.Errorf("first VF %s (%s), last %s (%s)", first.Address, first.Interface, last.Address, last.Interface)
	}
	if first.Driver != "iavf" || first.Device != "0x1889" || first.RDMA != "" || first.Operstate != "down" || first.Speed != "-1" {
		t.Errorf("first VF: %+v", first)
	}
}

func TestSetNumVFsRules(t *testing.T) {
	t.Parallel()
	root := renderNode(t)
	if err := sriov.SetNumVFs(root, cx7, 4); err != nil {
		t.Fatal(err)
	}
	before := tree(t, root)
	tests := []struct {
		name    string
		pf      string
		n       int
		wantErr error
		wantMsg string
	}{
		{"a non-zero change from a non-zero count", cx7, 2, syscall.EBUSY, "4 VFs already enabled, disable them (write 0) before enabling 2"},
		{"more than sriov_totalvfs", cx7b, 17, syscall.ERANGE, "17 VFs, but sriov_totalvfs is 16"},
		{"more than sriov_totalvfs while VFs exist", cx7, 17, syscall.ERANGE, "sriov_totalvfs is 16"},
		{"negative", cx7b, -1, syscall.EINVAL, "-1 VFs"},
		{"a NIC without SR-IOV", plain, 1, sriov.ErrNoSRIOV, "no sriov_totalvfs"},
		{"a GPU", gpu, 1, sriov.ErrNoSRIOV, gpu},
		{"no such function", "0000:99:00.0", 1, fs.ErrNotExist, "0000:99:00.0"},
		{"not an address", "13:00.0", 1, nil, "want dddd:bb:dd.f"},
	}
	for _, tc := range tests {
		err := sriov.SetNumVFs(root, tc.pf, tc.n)
		if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || !strings.Contains(err.Error(), tc.wantMsg) {
			t.Errorf("%s: SetNumVFs(%s, %d) = %v; want %v containing %q", tc.name, tc.pf, tc.n, err, tc.wantErr, tc.wantMsg)
		}
	}
	if diff := cmp.Diff(before, tree(t, root)); diff != "" {
		t.Errorf("refused writes changed the tree:\n%s", diff)
	}
	// Without a bound driver the kernel refuses with ENOENT.
	if err := os.Remove(filepath.Join(root, "sys/bus/pci/devices", cx7b, "driver")); err != nil {
		t.Fatal(err)
	}
	if err := sriov.SetNumVFs(root, cx7b, 1); !errors.Is(err, syscall.ENOENT) || !strings.Contains(err.Error(), "no driver bound") {
		t.Errorf("PF without a driver: %v", err)
	}
}

// TestSetNumVFsAfterACrash leaves what interrupted calls leave and checks
// that the next call converges.
func TestSetNumVFsAfterACrash(t *testing.T) {
	t.Parallel()
	root := renderNode(t)
	fresh := tree(t, root)
	pfDir, err := filepath.EvalSymlinks(filepath.Join(root, "sys/bus/pci/devices", cx7))
	if err != nil {
		t.Fatal(err)
	}
	// An interrupted 0 → 4: VF 3 lacks its virtfn link and netdev, and
	// sriov_numvfs still reads 0. The count is 3 (virtfn links) and a
	// different count is refused; 0 cleans everything up.
	if err := sriov.SetNumVFs(root, cx7, 4); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(pfDir, "virtfn3"), filepath.Join(root, "sys/class/net/enp19s0f4"), filepath.Join(filepath.Dir(pfDir), "0000:13:00.4/net")} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pfDir, "sriov_numvfs"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := sriov.NumVFs(root, cx7); err != nil || n != 3 {
		t.Errorf("NumVFs after the crash = %d, %v; want 3 (the virtfn links)", n, err)
	}
	if err := sriov.SetNumVFs(root, cx7, 0); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fresh, tree(t, root)); diff != "" {
		t.Errorf("0 after a crash left (-rendered +now):\n%s", diff)
	}
	// An interrupted 4 → 0 that removed the virtfn links only: the count
	// is 0, so 2 is allowed and removes the VFs 2 and 3 it finds.
	if err := sriov.SetNumVFs(root, cx7, 4); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := os.Remove(filepath.Join(pfDir, fmt.Sprintf("virtfn%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := sriov.SetNumVFs(root, cx7, 2); err != nil {
		t.Fatal(err)
	}
	if vfs := readVFs(t, root, cx7); len(vfs) != 2 {
		t.Errorf("%d VFs after 2, want 2", len(vfs))
	}
	for _, gone := range []string{"0000:13:00.3", "0000:13:00.4"} {
		if _, err := os.Lstat(filepath.Join(root, "sys/bus/pci/devices", gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("leftover VF %s not removed: %v", gone, err)
		}
	}
	if err := sriov.SetNumVFs(root, cx7, 0); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fresh, tree(t, root)); diff != "" {
		t.Errorf("after 0 (-rendered +now):\n%s", diff)
	}
}

func TestParseNumVFs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"4\n": 4, "4": 4, "0x10\n": 16, "010": 8, "0": 0, "65535": 65535} {
		if n, err := sriov.ParseNumVFs(in); err != nil || n != want {
			t.Errorf("ParseNumVFs(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	for in, want := range map[string]error{"": syscall.EINVAL, "abc": syscall.EINVAL, "-1": syscall.EINVAL, "4\n\n": syscall.EINVAL,
		" 4": syscall.EINVAL, "0x": syscall.EINVAL, "65536": syscall.ERANGE, "09": syscall.EINVAL} {
		if _, err := sriov.ParseNumVFs(in); !errors.Is(err, want) {
			t.Errorf("ParseNumVFs(%q) = %v, want %v", in, err, want)
		}
	}
}

// A hot-removed VF is gone from the bus, the netdevs and RDMA, its virtfn
// link dangles and the count stays, as the kernel shows it; the same count
// written again leaves it gone, 0 → n brings it back.
func TestRemoveVF(t *testing.T) {
	t.Parallel()
	root := renderNode(t)
	if err := sriov.SetNumVFs(root, cx7, 2); err != nil {
		t.Fatal(err)
	}
	before := readVFs(t, root, cx7)
	gone := before[1]
	if err := sriov.RemoveVF(root, gone.Address); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sys/bus/pci/devices/" + gone.Address, "sys/class/net/" + gone.Interface,
		"sys/class/infiniband/" + gone.RDMA, "dev/infiniband/" + strings.Fields(gone.Uverbs)[0]} {
		if _, err := os.Lstat(filepath.Join(root, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the VF's removal: %v, want it gone", p, err)
		}
	}
	link := filepath.Join(root, "sys/bus/pci/devices", cx7, "virtfn1")
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("virtfn1: %v, want the link kept (dangling)", err)
	}
	if n, err := sriov.NumVFs(root, cx7); err != nil || n != 2 {
		t.Errorf("NumVFs after the removal: %d, %v; want 2", n, err)
	}
	if err := sriov.RemoveVF(root, gone.Address); !errors.Is(err, sriov.ErrNoVF) {
		t.Errorf("removing it again: %v, want ErrNoVF", err)
	}
	if err := sriov.RemoveVF(root, cx7); !errors.Is(err, sriov.ErrNoVF) {
		t.Errorf("removing a PF: %v, want ErrNoVF", err)
	}
	if err := sriov.SetNumVFs(root, cx7, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "sys/bus/pci/devices", gone.Address)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the same count written again brought the removed VF back: %v", err)
	}
	if err := sriov.SetNumVFs(root, cx7, 0); err != nil {
		t.Fatal(err)
	}
	if err := sriov.SetNumVFs(root, cx7, 2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, readVFs(t, root, cx7)); diff != "" {
		t.Errorf("after 0 → 2 the VFs differ (-before +after):\n%s", diff)
	}
}
