package render

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	"k8s.io/dynamic-resource-allocation/deviceattribute"

	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/emulator/profile"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// requireMknod skips the test when this process may not create device nodes.
func requireMknod(t *testing.T) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "probe")
	if err := unix.Mknod(path, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("rendering needs mknod (root or CAP_MKNOD): %v", err)
	}
}

func loadProfile(t *testing.T, nameOrPath string) *profile.Profile {
	t.Helper()
	p, err := profile.Load(nameOrPath)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func render(t *testing.T, p *profile.Profile, opts Options) string {
	t.Helper()
	if opts.Root == "" {
		opts.Root = filepath.Join(t.TempDir(), "root")
	}
	if err := Render(context.Background(), p, opts); err != nil {
		t.Fatal(err)
	}
	return opts.Root
}

// fakeShim writes stand-ins for the shim and, beside it as build-shim
// writes it, nvidia-smi; it returns the shim's path.
func fakeShim(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "libnvidia-ml.so")
	if err := os.WriteFile(path, []byte("stand-in for the NVML shim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, NvidiaSMIName), []byte("stand-in for nvidia-smi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestGolden(t *testing.T) {
	requireMknod(t)
	for _, name := range profile.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := render(t, loadProfile(t, name), Options{ShimLibrary: fakeShim(t)})
			got := dumpTree(t, root)
			golden := filepath.Join("testdata", "golden", name+".txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("rendered tree differs from %s (-want +got; go test -update rewrites it):\n%s", golden, diff)
			}
		})
	}
}

// TestDeviceAttribute reads a rendered tree with the helpers DRA drivers use
// for resource.kubernetes.io/pcieRoot and numaNode.
func TestDeviceAttribute(t *testing.T) {
	requireMknod(t)
	tests := []struct {
		profile string
		// want maps a GPU address to its pcieRoot and numaNode list.
		want map[string]attrs
	}{
		{
			profile: "dgx-h100",
			want: map[string]attrs{
				"0000:18:00.0": {"pci0000:00", []int64{0}}, "0000:2a:00.0": {"pci0000:00", []int64{0}},
				"0000:3a:00.0": {"pci0000:00", []int64{0}}, "0000:5d:00.0": {"pci0000:00", []int64{0}},
				// One NUMA node per socket: the other node is at the
				// smallest distance but on another socket, so the list
				// form holds the GPU's node only.
				"0000:9a:00.0": {"pci0000:80", []int64{1}}, "0000:ab:00.0": {"pci0000:80", []int64{1}},
				"0000:ba:00.0": {"pci0000:80", []int64{1}}, "0000:db:00.0": {"pci0000:80", []int64{1}},
			},
		},
		{
			profile: "testdata/profiles/snc.yaml",
			want: map[string]attrs{
				// Sub-NUMA clustering: the sibling node on the same socket
				// joins the list.
				"0000:05:00.0": {"pci0000:00", []int64{1, 0}},
				"0000:12:00.0": {"pci0000:00", []int64{1, 0}},
				"0000:14:00.0": {"pci0000:00", []int64{1, 0}},
				"0000:16:00.0": {"pci0000:00", []int64{1, 0}},
				"0001:05:00.0": {"pci0001:00", []int64{2, 3}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.profile), func(t *testing.T) {
			t.Parallel()
			p := loadProfile(t, tc.profile)
			root := render(t, p, Options{})
			fsys := deviceattribute.WithFSFromRoot(filepath.Join(root, "sys"))
			got := map[string]attrs{}
			for bdf := range tc.want {
				root, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(bdf, fsys)
				if err != nil {
					t.Errorf("pcieRoot of %s: %v", bdf, err)
					continue
				}
				scalar, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(bdf, deviceattribute.ScalarAttribute, fsys)
				if err != nil {
					t.Errorf("numaNode of %s: %v", bdf, err)
					continue
				}
				list, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(bdf, deviceattribute.ListAttribute, fsys)
				if err != nil {
					t.Errorf("numaNode list of %s: %v", bdf, err)
					continue
				}
				if *scalar.Value.IntValue != list.Value.IntValues[0] {
					t.Errorf("%s: scalar numaNode %d, list %v", bdf, *scalar.Value.IntValue, list.Value.IntValues)
				}
				got[bdf] = attrs{*root.Value.StringValue, list.Value.IntValues}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("attributes (-want +got):\n%s", diff)
			}
			// Every CPU maps back to its NUMA node.
			for _, n := range p.Spec.NUMANodes {
				cpus, _ := platform.ParseCPUList(n.CPUList)
				for _, c := range cpus {
					node, err := deviceattribute.GetNUMANodeForCPU(c, fsys)
					if err != nil || node != *n.ID {
						t.Errorf("GetNUMANodeForCPU(%d) = %d, %v; want %d", c, node, err, *n.ID)
					}
				}
			}
		})
	}
}

type attrs struct {
	PCIeRoot string
	NUMA     []int64
}

// TestLinksStayInsideRoot checks that every symlink is relative, resolves,
// and stays inside the root, so the tree works wherever it is mounted.
func TestLinksStayInsideRoot(t *testing.T) {
	requireMknod(t)
	t.Parallel()
	root := render(t, loadProfile(t, "dgx-h100"), Options{ShimLibrary: fakeShim(t)})
	links := 0
	err := filepath.Walk(root, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return err
		}
		links++
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		if filepath.IsAbs(target) {
			t.Errorf("%s -> %s is absolute", path, target)
			return nil
		}
		resolved := filepath.Join(filepath.Dir(path), target)
		if !strings.HasPrefix(resolved, root+string(filepath.Separator)) {
			t.Errorf("%s -> %s leaves the root", path, target)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s -> %s does not resolve: %v", path, target, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 8 GPUs, 8 NICs, 16 downstream, 4 upstream and 4 root ports: each has
	// driver and subsystem links plus its bus and driver entries; each NIC's
	// netdev has device, subsystem and class links, its RDMA and verbs
	// devices three each; 224 CPUs link to their node; one library link.
	if want := 40*4 + 8*3 + 8*6 + 224 + 1; links != want {
		t.Errorf("%d links, want %d", links, want)
	}
}

// TestSurfacesAgree checks that the state file, device nodes, sysfs and
// procfs describe the same GPUs.
func TestSurfacesAgree(t *testing.T) {
	requireMknod(t)
	t.Parallel()
	root := render(t, loadProfile(t, "dgx-h100"), Options{})
	state := readState(t, root)
	if len(state.GPUs) != 8 {
		t.Fatalf("state lists %d GPUs, want 8", len(state.GPUs))
	}
	prev := ""
	for _, g := range state.GPUs {
		bdf := strings.ToLower(strings.TrimPrefix(g.BusID, "0000"))
		if bdf <= prev {
			t.Errorf("state GPUs not in PCI order: %s after %s", bdf, prev)
		}
		prev = bdf
		var st syscall.Stat_t
		node := filepath.Join(root, "dev", fmt.Sprintf("nvidia%d", g.Minor))
		if err := syscall.Stat(node, &st); err != nil {
			t.Errorf("minor %d: %v", g.Minor, err)
		} else if st.Mode&syscall.S_IFMT != syscall.S_IFCHR || unix.Major(st.Rdev) != 195 || unix.Minor(st.Rdev) != uint32(g.Minor) {
			t.Errorf("%s: mode %o, device %d:%d; want character device 195:%d", node, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev), g.Minor)
		}
		info := readKeyValues(t, filepath.Join(root, "proc/driver/nvidia/gpus", bdf, "information"))
		want := map[string]string{"Model": g.Name, "GPU UUID": g.UUID, "Bus Location": bdf, "Device Minor": strconv.Itoa(g.Minor)}
		for k, v := range want {
			if info[k] != v {
				t.Errorf("%s information %s = %q, want %q", bdf, k, info[k], v)
			}
		}
		sys := filepath.Join(root, "sys/bus/pci/devices", bdf)
		if got := readTrimmed(t, filepath.Join(sys, "device")); got != fmt.Sprintf("0x%04x", g.PCIDeviceID>>16) {
			t.Errorf("%s device %s, state pciDeviceId %#x", bdf, got, g.PCIDeviceID)
		}
		if got := readTrimmed(t, filepath.Join(sys, "numa_node")); got != strconv.Itoa(g.NUMANode) {
			t.Errorf("%s numa_node %s, state numaNode %d", bdf, got, g.NUMANode)
		}
		if drv, err := os.Readlink(filepath.Join(sys, "driver")); err != nil || filepath.Base(drv) != "nvidia" {
			t.Errorf("%s driver link %q, %v", bdf, drv, err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(root, "dev/nvidiactl"), &st); err != nil || unix.Major(st.Rdev) != 195 || unix.Minor(st.Rdev) != 255 {
		t.Errorf("nvidiactl: %v, device %d:%d", err, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
}

func readKeyValues(t *testing.T, path string) map[string]string {
	t.Helper()
	kv := map[string]string{}
	for _, line := range strings.Split(readTrimmed(t, path), "\n") {
		k, v, _ := strings.Cut(line, ":")
		kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return kv
}

func readTrimmed(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// TestProcDevicesFormat applies the NVIDIA DRA driver's GetDeviceMajor regex.
func TestProcDevicesFormat(t *testing.T) {
	t.Parallel()
	major := func(name string) (int, bool) {
		re := regexp.MustCompile("(?s)Character devices:.*?([0-9]+) " + regexp.QuoteMeta(name) + "\n.*Block devices:")
		m := re.FindStringSubmatch(procDevices)
		if len(m) != 2 {
			return 0, false
		}
		n, err := strconv.Atoi(m[1])
		return n, err == nil
	}
	for _, tc := range []struct {
		name  string
		major int
		found bool
	}{
		{"nvidia-frontend", 195, true},
		{"nvidia", 195, true},
		{"mem", 1, true},
		{"nvidia-caps", NvidiaCapsMajor, true},
		{"loop", 0, false}, // a block device
	} {
		got, ok := major(tc.name)
		if ok != tc.found || got != tc.major {
			t.Errorf("major of %q = %d, %v; want %d, %v", tc.name, got, ok, tc.major, tc.found)
		}
	}
}

func TestRerenderConverges(t *testing.T) {
	requireMknod(t)
	t.Parallel()
	dgx, minimal := loadProfile(t, "dgx-h100"), loadProfile(t, "testdata/profiles/snc.yaml")
	shim := fakeShim(t)
	root := render(t, dgx, Options{ShimLibrary: shim})
	first := dumpTree(t, root)
	render(t, dgx, Options{Root: root, ShimLibrary: shim})
	if diff := cmp.Diff(first, dumpTree(t, root)); diff != "" {
		t.Errorf("second render of the same profile changed the tree:\n%s", diff)
	}
	// Another profile without the shim leaves nothing of the first behind.
	render(t, minimal, Options{Root: root})
	fresh := render(t, minimal, Options{})
	if diff := cmp.Diff(dumpTree(t, fresh), dumpTree(t, root)); diff != "" {
		t.Errorf("re-render with another profile differs from a fresh render (-fresh +rerendered):\n%s", diff)
	}
}

func TestRefusesForeignRoot(t *testing.T) {
	t.Parallel()
	p := loadProfile(t, "dgx-h100")
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious")
	if err := os.WriteFile(precious, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Render(context.Background(), p, Options{Root: dir})
	if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), dir) {
		t.Errorf("render into a foreign directory: want ErrNotOwned naming %s, got %v", dir, err)
	}
	if data, err := os.ReadFile(precious); err != nil || string(data) != "keep me" {
		t.Errorf("foreign file changed: %q, %v", data, err)
	}
	if err := Render(context.Background(), p, Options{Root: precious}); !errors.Is(err, ErrNotOwned) {
		t.Errorf("render onto a file: want ErrNotOwned, got %v", err)
	}
}

func TestRemoveTreeStopsAtOtherFilesystems(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "sub", "file")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	otherDev := fi.Sys().(*syscall.Stat_t).Dev + 1
	if err := removeTree(filepath.Join(dir, "sub"), otherDev); err == nil || !strings.Contains(err.Error(), "another filesystem") {
		t.Errorf("removeTree across filesystems: %v", err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("file removed across a filesystem boundary: %v", err)
	}
}

func TestShimInstall(t *testing.T) {
	requireMknod(t)
	t.Parallel()
	p := loadProfile(t, "dgx-h100")
	shim := fakeShim(t)
	root := render(t, p, Options{ShimLibrary: shim})
	lib := filepath.Join(root, LibraryDir, "libnvidia-ml.so.570.172.08")
	fi, err := os.Lstat(lib)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("library %s: %v, %v", lib, fi, err)
	}
	if got := readTrimmed(t, filepath.Join(root, LibraryDir, "libnvidia-ml.so.1")); got != "stand-in for the NVML shim" {
		t.Errorf("libnvidia-ml.so.1 reads %q", got)
	}
	if target, err := os.Readlink(filepath.Join(root, LibraryDir, "libnvidia-ml.so.1")); err != nil || target != "libnvidia-ml.so.570.172.08" {
		t.Errorf("libnvidia-ml.so.1 -> %q, %v", target, err)
	}
	// nvidia-smi comes from beside the shim by default, or from NvidiaSMI.
	smi := filepath.Join(root, NvidiaSMIPath)
	if fi, err := os.Lstat(smi); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("nvidia-smi %s: %v, %v", smi, fi, err)
	}
	if got := readTrimmed(t, smi); got != "stand-in for nvidia-smi" {
		t.Errorf("%s reads %q", NvidiaSMIPath, got)
	}
	other := filepath.Join(t.TempDir(), "my-nvidia-smi")
	if err := os.WriteFile(other, []byte("another nvidia-smi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root = render(t, p, Options{ShimLibrary: shim, NvidiaSMI: other})
	if got := readTrimmed(t, filepath.Join(root, NvidiaSMIPath)); got != "another nvidia-smi" {
		t.Errorf("with NvidiaSMI set, %s reads %q", NvidiaSMIPath, got)
	}
	// Without a shim nothing is installed.
	bare := render(t, p, Options{})
	if _, err := os.Lstat(filepath.Join(bare, "usr")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("render without shim created usr/: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	shim := fakeShim(t)
	smi := filepath.Join(filepath.Dir(shim), NvidiaSMIName)
	// A shim built before build-shim wrote nvidia-smi beside it.
	lonely := filepath.Join(t.TempDir(), "libnvidia-ml.so")
	if err := os.WriteFile(lonely, []byte("stand-in for the NVML shim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		opts    Options
		wantErr string
	}{
		{opts: Options{Root: "/tmp/r"}},
		{opts: Options{Root: "r", ShimLibrary: shim}},
		{opts: Options{}, wantErr: "root: required"},
		{opts: Options{Root: "/"}, wantErr: "root: must not be /"},
		{opts: Options{Root: "//"}, wantErr: "root: must not be /"},
		{opts: Options{Root: "r", ShimLibrary: filepath.Dir(shim)}, wantErr: "not a regular file"},
		{opts: Options{Root: "r", ShimLibrary: shim + ".missing"}, wantErr: "no such file"},
		{opts: Options{Root: "r", NvidiaSMI: smi}},
		{opts: Options{Root: "r", ShimLibrary: lonely}, wantErr: "nvidiaSMI: stat " + filepath.Join(filepath.Dir(lonely), NvidiaSMIName) + ": no such file or directory (drakit emulator build-shim writes nvidia-smi beside the shim"},
		{opts: Options{Root: "r", ShimLibrary: shim, NvidiaSMI: filepath.Dir(shim)}, wantErr: "nvidiaSMI: " + filepath.Dir(shim) + " is not a regular file"},
	}
	for _, tc := range tests {
		tc.opts.Default()
		err := tc.opts.Validate()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Validate(%+v) = %v, want error containing %q", tc.opts, err, tc.wantErr)
		}
	}
}

func TestRenderRejectsInvalidProfile(t *testing.T) {
	t.Parallel()
	p := loadProfile(t, "dgx-h100")
	p.Spec.GPUs[1].Minor = p.Spec.GPUs[0].Minor
	root := filepath.Join(t.TempDir(), "root")
	err := Render(context.Background(), p, Options{Root: root})
	if !errors.Is(err, profile.ErrInvalid) || !strings.Contains(err.Error(), "spec.gpus[1].minor") {
		t.Errorf("want ErrInvalid naming spec.gpus[1].minor, got %v", err)
	}
	if _, err := os.Lstat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an invalid profile created the root: %v", err)
	}
}
