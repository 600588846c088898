package exec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"k8s.io/dynamic-resource-allocation/deviceattribute"

	emuexec "drakit.dev/drakit/emulator/exec"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

// helperEnv makes the test binary, run as the command under Run, print
// what it sees (helperView) instead of running tests.
const helperEnv = "DRAKIT_EXEC_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "view":
		os.Exit(helperView())
	case "mig":
		os.Exit(helperMIG())
	}
	os.Exit(m.Run())
}

// gpuSeen is one GPU as a driver finds it on the node.
type gpuSeen struct {
	BDF string
	// Link is the raw /sys/bus/pci/devices/<bdf> link, relative as the
	// kernel makes it.
	Link string
	// RootComplex is the directory below /sys/devices the link resolves into.
	RootComplex string
	// PCIeRoot and NUMA are what deviceattribute reports with its default /sys.
	PCIeRoot string
	NUMA     int
	// NUMANodeFile is the numa_node file's content.
	NUMANodeFile string
	DevNode      string // "c 195:<minor>" of /dev/nvidia<minor>
}

// nvmlSeen is one GPU as NVML, loaded from the standard library path,
// reports it.
type nvmlSeen struct {
	UUID  string
	BDF   string
	Minor int
}

type view struct {
	GPUs []gpuSeen
	NVML []nvmlSeen
	// NVMLErr is set when NVML failed.
	NVMLErr string
}

// helperView is the command under Run: it walks /sys/bus/pci/devices the
// way the kernel lays it out and asks NVML through dlopen("libnvidia-ml.so.1"),
// prints a view as one JSON line, then waits for stdin to close.
func helperView() int {
	var v view
	entries, err := os.ReadDir("/sys/bus/pci/devices")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for _, e := range entries {
		dir := filepath.Join("/sys/bus/pci/devices", e.Name())
		vendor, _ := os.ReadFile(filepath.Join(dir, "vendor"))
		class, _ := os.ReadFile(filepath.Join(dir, "class"))
		if strings.TrimSpace(string(vendor)) != "0x10de" || !strings.HasPrefix(string(class), "0x0302") {
			continue
		}
		g := gpuSeen{BDF: e.Name()}
		g.Link, _ = os.Readlink(dir)
		if resolved, err := filepath.EvalSymlinks(dir); err == nil {
			if rest, ok := strings.CutPrefix(resolved, "/sys/devices/"); ok {
				g.RootComplex, _, _ = strings.Cut(rest, "/")
			}
		}
		if a, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(e.Name()); err == nil && a.Value.StringValue != nil {
			g.PCIeRoot = *a.Value.StringValue
		} else if err != nil {
			g.PCIeRoot = "error: " + err.Error()
		}
		if a, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(e.Name(), deviceattribute.ScalarAttribute); err == nil && a.Value.IntValue != nil {
			g.NUMA = int(*a.Value.IntValue)
		} else {
			g.NUMA = -100
		}
		b, _ := os.ReadFile(filepath.Join(dir, "numa_node"))
		g.NUMANodeFile = strings.TrimSpace(string(b))
		v.GPUs = append(v.GPUs, g)
	}
	lib := gonvml.New() // no library path: dlopen("libnvidia-ml.so.1")
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		v.NVMLErr = ret.Error()
	} else {
		n, _ := lib.DeviceGetCount()
		for i := range n {
			d, _ := lib.DeviceGetHandleByIndex(i)
			uuid, _ := d.GetUUID()
			pci, _ := d.GetPciInfo()
			minor, _ := d.GetMinorNumber()
			var bdf strings.Builder
			for _, c := range pci.BusId {
				if c == 0 {
					break
				}
				bdf.WriteByte(byte(c))
			}
			v.NVML = append(v.NVML, nvmlSeen{UUID: uuid, BDF: strings.ToLower(strings.TrimPrefix(bdf.String(), "0000")), Minor: minor})
		}
		lib.Shutdown()
	}
	for i := range v.GPUs {
		for _, n := range v.NVML {
			if n.BDF == v.GPUs[i].BDF {
				var st syscall.Stat_t
				if err := syscall.Stat(fmt.Sprintf("/dev/nvidia%d", n.Minor), &st); err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFCHR {
					v.GPUs[i].DevNode = fmt.Sprintf("c %d:%d", st.Rdev>>8&0xfff, st.Rdev&0xff|st.Rdev>>12&0xfff00)
				}
			}
		}
	}
	out, _ := json.Marshal(v)
	fmt.Printf("%s\n", out)
	io.Copy(io.Discard, os.Stdin) // hold the namespace until the test has looked at the host
	return 0
}

// needsRoot skips t unless it runs as root: Run needs a mount namespace and
// render needs mknod.
func needsRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: emulator exec creates a mount namespace and render creates device nodes (run go test as root)")
	}
}

// renderRoot renders the built-in profile name with the NVML shim into a
// new emulator root.
func renderRoot(t *testing.T, name string) (string, *profile.Profile) {
	t.Helper()
	return renderRootIn(t, t.TempDir(), name)
}

// renderRootIn is renderRoot into dir/node.
func renderRootIn(t *testing.T, dir, name string) (string, *profile.Profile) {
	t.Helper()
	p, err := profile.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "node")
	if err := render.Render(context.Background(), p, render.Options{Root: root, ShimLibrary: nvmltest.BuildShim(t)}); err != nil {
		t.Fatal(err)
	}
	return root, p
}

// mountTable is the host's mount table restricted to the mount points at or
// below the given directories: those where Run could leak a mount. Other
// packages' tests run at the same time and mount elsewhere (the local
// cluster bind-mounts its kubelet root dir), which must not fail this test.
func mountTable(t *testing.T, under ...string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			t.Fatalf("/proc/self/mountinfo line %q has fewer than 5 fields", line)
		}
		if belowAny(fields[4], under) {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}

func belowAny(mountPoint string, dirs []string) bool {
	for _, d := range dirs {
		if mountPoint == d || strings.HasPrefix(mountPoint, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

func listing(t *testing.T, dirs ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			out[d] = append(out[d], e.Name())
		}
	}
	return out
}

// lineWriter collects output and signals when the first line is complete.
// (It does not embed bytes.Buffer: io.Copy would use the promoted ReadFrom
// and never call Write.)
type lineWriter struct {
	buf  bytes.Buffer
	line chan struct{}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n, err := w.buf.Write(p)
	if bytes.IndexByte(w.buf.Bytes(), '\n') >= 0 && w.line != nil {
		close(w.line)
		w.line = nil
	}
	return n, err
}

// TestRunShowsTheEmulatedNode renders dgx-h100 and runs a program under
// Run that reads /sys/bus/pci/devices the way the kernel lays it out and
// loads NVML from the standard library path: it must find the profile's
// GPUs with their PCIe roots and NUMA nodes, and NVML must enumerate them.
// While it runs and after, the host's mount table and directories are
// unchanged.
func TestRunShowsTheEmulatedNode(t *testing.T) {
	needsRoot(t)
	root, p := renderRoot(t, "dgx-h100")
	topo, err := p.Topology()
	if err != nil {
		t.Fatal(err)
	}
	var want view
	for _, g := range topo.GPUs {
		bdf := g.Function.Address.String()
		want.GPUs = append(want.GPUs, gpuSeen{
			BDF: bdf, RootComplex: g.HostBridge.Name(), PCIeRoot: g.HostBridge.Name(),
			NUMA: g.HostBridge.NUMANode, NUMANodeFile: fmt.Sprint(g.HostBridge.NUMANode),
			DevNode: fmt.Sprintf("c 195:%d", *g.GPU.Minor),
		})
		want.NVML = append(want.NVML, nvmlSeen{UUID: g.GPU.UUID, BDF: bdf, Minor: *g.GPU.Minor})
	}

	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // Run's staging directories go here
	hostDirs := []string{"/dev", "/proc/driver", emuexec.DefaultLibraryDir, "/sys/devices", "/sys/bus/pci/devices"}
	plan, err := emuexec.NewPlan(configFor(root))
	if err != nil {
		t.Fatal(err)
	}
	// Where Run mounts: its shadows, its targets, its staging dirs and the
	// emulator root it binds from.
	mountDirs := []string{tmp, root}
	for _, s := range plan.Shadows {
		mountDirs = append(mountDirs, s.Dir)
	}
	for _, m := range plan.Mounts {
		mountDirs = append(mountDirs, m.Target)
	}
	tableBefore, dirsBefore := mountTable(t, mountDirs...), listing(t, hostDirs...)

	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinW.Close()
	stdout := &lineWriter{line: make(chan struct{})}
	var stderr bytes.Buffer
	line := stdout.line
	errc := make(chan error, 1)
	go func() {
		defer stdinR.Close()
		errc <- emuexec.Run(context.Background(), configFor(root), emuexec.Command{
			Args:   []string{os.Args[0], "-test.run=^$"},
			Env:    append(os.Environ(), helperEnv+"=view"),
			Stdin:  stdinR,
			Stdout: stdout, Stderr: &stderr,
		})
	}()
	select {
	case <-line:
	case err := <-errc:
		t.Fatalf("Run returned before the command printed its view: %v\nstderr:\n%s", err, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatal("the command printed nothing in 2 minutes")
	}
	if during := mountTable(t, mountDirs...); during != tableBefore {
		t.Errorf("the host's mount table changed while the command ran:\n%s", cmp.Diff(tableBefore, during))
	}
	stdinW.Close()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v\nstderr:\n%s", err, stderr.String())
	}

	var got view
	first, _, _ := bytes.Cut(stdout.buf.Bytes(), []byte("\n"))
	if err := json.Unmarshal(first, &got); err != nil {
		t.Fatalf("command output %q: %v\nstderr:\n%s", stdout.buf.String(), err, stderr.String())
	}
	for i, g := range got.GPUs {
		if !strings.HasPrefix(g.Link, "../../../devices/pci") || !strings.HasSuffix(g.Link, "/"+g.BDF) {
			t.Errorf("GPU %s: /sys/bus/pci/devices link %q is not relative into ../../../devices/pci…", g.BDF, g.Link)
		}
		got.GPUs[i].Link = ""
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what the command saw (-want +got):\n%s", diff)
	}

	if after := mountTable(t, mountDirs...); after != tableBefore {
		t.Errorf("the host's mount table changed:\n%s", cmp.Diff(tableBefore, after))
	}
	if diff := cmp.Diff(dirsBefore, listing(t, hostDirs...)); diff != "" {
		t.Errorf("host directories changed (-before +after):\n%s", diff)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("Run left %v in $TMPDIR", left)
	}
}

// TestRunExitStatus checks that the command's exit status comes back as an
// *exec.ExitError, and that the command sees RootEnv and the emulated
// procfs surfaces.
func TestRunExitStatus(t *testing.T) {
	needsRoot(t)
	root, _ := renderRoot(t, "mixed-mig")
	var out bytes.Buffer
	err := emuexec.Run(context.Background(), configFor(root), emuexec.Command{
		Args: []string{"sh", "-c", `echo "$DRAKIT_EMULATOR_ROOT"; grep -c . /proc/driver/nvidia-caps/mig-minors;
			grep nvidia-caps /proc/devices; ls /dev/nvidia-caps | head -1; exit 3`},
		Stdout: &out, Stderr: &out,
	})
	var exitErr *osexec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Fatalf("Run = %v, want exit status 3\n%s", err, out.String())
	}
	want := root + "\n4322\n235 nvidia-caps\nnvidia-cap1\n"
	if out.String() != want {
		t.Errorf("command printed %q, want %q", out.String(), want)
	}
}

// helperMIG creates a 1-slice GPU instance through NVML, loaded from the
// standard library path, on the first GPU with MIG on and room for one, and
// prints "<minor> <GI id>".
func helperMIG() int {
	lib := gonvml.New()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		fmt.Fprintln(os.Stderr, "Init:", ret)
		return 2
	}
	defer lib.Shutdown()
	n, _ := lib.DeviceGetCount()
	for i := range n {
		d, _ := lib.DeviceGetHandleByIndex(i)
		if mode, _, ret := d.GetMigMode(); ret != gonvml.SUCCESS || mode != gonvml.DEVICE_MIG_ENABLE {
			continue
		}
		info, ret := d.GetGpuInstanceProfileInfo(gonvml.GPU_INSTANCE_PROFILE_1_SLICE)
		if ret != gonvml.SUCCESS {
			continue
		}
		if free, ret := d.GetGpuInstanceRemainingCapacity(&info); ret != gonvml.SUCCESS || free == 0 {
			continue
		}
		gi, ret := d.CreateGpuInstance(&info)
		if ret != gonvml.SUCCESS {
			fmt.Fprintln(os.Stderr, "CreateGpuInstance:", ret)
			return 2
		}
		giInfo, _ := gi.GetInfo()
		minor, _ := d.GetMinorNumber()
		fmt.Printf("%d %d\n", minor, giInfo.Id)
		return 0
	}
	fmt.Fprintln(os.Stderr, "no GPU with MIG on and room for a 1-slice instance")
	return 2
}

// TestRunMIGWritesReachTheRoot creates a GPU instance through NVML inside
// the namespace and checks that the shim's writes to /dev/nvidia-caps and
// /proc/driver/nvidia/capabilities landed in the emulator root, where the
// host's processes (the driver, drakit emulator mig) see them.
func TestRunMIGWritesReachTheRoot(t *testing.T) {
	needsRoot(t)
	root, _ := renderRoot(t, "mixed-mig")
	var out, stderr bytes.Buffer
	err := emuexec.Run(context.Background(), configFor(root), emuexec.Command{
		Args: []string{os.Args[0], "-test.run=^$"}, Env: append(os.Environ(), helperEnv+"=mig"),
		Stdout: &out, Stderr: &stderr,
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr.String())
	}
	var minor, gi int
	if _, err := fmt.Sscanf(out.String(), "%d %d", &minor, &gi); err != nil {
		t.Fatalf("command printed %q: %v", out.String(), err)
	}
	access := filepath.Join(root, fmt.Sprintf("proc/driver/nvidia/capabilities/gpu%d/mig/gi%d/access", minor, gi))
	b, err := os.ReadFile(access)
	if err != nil {
		t.Fatalf("the GI's capability file is not in the root: %v", err)
	}
	var capMinor int
	if _, err := fmt.Sscanf(string(b), "DeviceFileMinor: %d", &capMinor); err != nil {
		t.Fatalf("%s: %q: %v", access, b, err)
	}
	if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("dev/nvidia-caps/nvidia-cap%d", capMinor))); err != nil {
		t.Errorf("the GI's capability node is not in the root: %v", err)
	}
}

// TestPlan checks the mount plan for a rendered root without running it:
// every target the host lacks lies below a shadow, the host's own NVIDIA
// entries are hidden, and nothing names a forbidden directory.
func TestPlan(t *testing.T) {
	needsRoot(t) // rendering creates device nodes
	root, p := renderRoot(t, "dgx-h100")
	plan, err := emuexec.NewPlan(configFor(root))
	if err != nil {
		t.Fatal(err)
	}
	shadows := map[string]emuexec.Shadow{}
	for _, s := range plan.Shadows {
		shadows[s.Dir] = s
		if s.Dir == "/" || s.Dir == "/proc" || s.Dir == "/sys" || strings.HasPrefix(s.Dir, "/sys/fs/cgroup") {
			t.Errorf("plan shadows %s", s.Dir)
		}
	}
	if d := shadows["/dev"]; !slices.Equal(d.Hide, []string{"nvidia*"}) {
		t.Errorf("/dev shadow %+v, want one hiding nvidia*", d)
	}
	targets := map[string]emuexec.Mount{}
	for _, m := range plan.Mounts {
		targets[m.Target] = m
		if _, err := os.Lstat(m.Target); err == nil && m.Link == "" {
			continue
		}
		under := false
		for dir := range shadows {
			under = under || strings.HasPrefix(m.Target, dir+"/")
		}
		if !under {
			t.Errorf("%s: the host lacks the target and no shadow covers it", m)
		}
	}
	topo, _ := p.Topology()
	var want []string
	for _, hb := range topo.HostBridges {
		want = append(want, "/sys/devices/"+hb.Name())
	}
	want = append(want, "/sys/bus/pci", "/sys/devices/system/node", "/sys/devices/system/cpu", "/dev/nvidia0",
		"/dev/nvidiactl", "/dev/nvidia-caps", "/proc/devices", "/proc/driver/nvidia", "/proc/driver/nvidia-caps")
	for _, w := range want {
		if _, ok := targets[w]; !ok {
			t.Errorf("plan mounts nothing on %s:\n%s", w, plan)
		}
	}
	lib := filepath.Join(emuexec.DefaultLibraryDir, "libnvidia-ml.so.1")
	if real, err := filepath.EvalSymlinks(emuexec.DefaultLibraryDir); err == nil {
		lib = filepath.Join(real, "libnvidia-ml.so.1")
	}
	if m := targets[lib]; m.Link != "libnvidia-ml.so."+p.Spec.Driver.DriverVersion {
		t.Errorf("plan makes %s %+v, want a link to libnvidia-ml.so.%s", lib, m, p.Spec.Driver.DriverVersion)
	}
	smi := filepath.Join(canonical(t, "/usr/bin"), "nvidia-smi")
	if m := targets[smi]; m.Source != filepath.Join(root, render.NvidiaSMIPath) {
		t.Errorf("plan mounts %+v on %s, want the root's %s", m, smi, render.NvidiaSMIPath)
	}
}

// canonical is dir with its symbolic links resolved, as plans name targets.
func canonical(t *testing.T, dir string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// TestRunNvidiaSMI runs "nvidia-smi -L" (from $PATH, the root's
// /usr/bin/nvidia-smi) on a node with static MIG devices and compares it
// with the profile and the rendered state; the host's /usr/bin is unchanged.
func TestRunNvidiaSMI(t *testing.T) {
	needsRoot(t)
	root, p := renderRoot(t, "dgx-a100-mig")
	state, err := nvmlstate.ReadFile(filepath.Join(root, nvmlstate.RelativePath))
	if err != nil {
		t.Fatal(err)
	}
	before := listing(t, "/usr/bin")
	var out, errOut bytes.Buffer
	err = emuexec.Run(context.Background(), configFor(root), emuexec.Command{
		Args: []string{"nvidia-smi", "-L"}, Stdout: &out, Stderr: &errOut,
	})
	if err != nil {
		t.Fatalf("Run nvidia-smi -L: %v\n%s%s", err, out.String(), errOut.String())
	}
	if diff := cmp.Diff(nvmltest.NvidiaSMIList(state), out.String()); diff != "" {
		t.Errorf("nvidia-smi -L (-want +got):\n%s", diff)
	}
	topo, err := p.Topology()
	if err != nil {
		t.Fatal(err)
	}
	for i, pg := range topo.GPUs {
		if want := fmt.Sprintf("GPU %d: %s (UUID: %s)\n", i, pg.GPU.Name, pg.GPU.UUID); !strings.Contains(out.String(), want) {
			t.Errorf("nvidia-smi -L lacks %q", want)
		}
	}
	if len(state.ComputeInstances) == 0 || strings.Count(out.String(), "  MIG ") != len(state.ComputeInstances) {
		t.Errorf("nvidia-smi -L shows %d MIG devices, the state has %d", strings.Count(out.String(), "  MIG "), len(state.ComputeInstances))
	}
	if diff := cmp.Diff(before, listing(t, "/usr/bin")); diff != "" {
		t.Errorf("host /usr/bin changed (-before +after):\n%s", diff)
	}
}

// TestPlanRefuses checks the roots and targets NewPlan refuses before
// anything is mounted.
func TestPlanRefuses(t *testing.T) {
	notRendered := t.TempDir()
	_, err := emuexec.NewPlan(configFor(notRendered))
	if !errors.Is(err, emuexec.ErrNotRendered) || !strings.Contains(err.Error(), "drakit emulator render") {
		t.Errorf("plan for an unrendered root: %v, want ErrNotRendered saying how to render", err)
	}

	// A state file and marker but no library: --shim is the way out.
	noLib := nvmltest.NewRoot(t, nvmltest.SampleState())
	if err := os.WriteFile(filepath.Join(noLib, render.MarkerFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := emuexec.NewPlan(configFor(noLib)); err == nil || !strings.Contains(err.Error(), "--shim") {
		t.Errorf("plan for a root without NVML library: %v, want an error naming --shim", err)
	}

	// A procfs entry the host lacks would need /proc shadowed.
	shim := filepath.Join(t.TempDir(), "libnvidia-ml.so")
	if err := os.WriteFile(shim, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(noLib, "proc", "drakit-no-such-entry"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := configFor(noLib)
	cfg.Shim = shim
	_, err = emuexec.NewPlan(cfg)
	if err == nil || !strings.Contains(err.Error(), "/proc/drakit-no-such-entry does not exist") || !strings.Contains(err.Error(), "/proc cannot be shadowed") {
		t.Errorf("plan needing /proc shadowed: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  emuexec.Config
		want []string // substrings of the error, each naming its flag
	}{
		{"nothing set", emuexec.Config{}, []string{"--root: required", "--library-dir: required"}},
		{"root is /", emuexec.Config{Root: "/", LibraryDir: "/usr/lib"}, []string{"--root: must not be /"}},
		{"root missing", emuexec.Config{Root: "/no/such/root", LibraryDir: "/usr/lib"}, []string{"--root: stat /no/such/root"}},
		{"root is a file", emuexec.Config{Root: file, LibraryDir: "/usr/lib"}, []string{"--root: " + file + " is not a directory"}},
		{"shim missing", emuexec.Config{Root: t.TempDir(), Shim: "/no/shim", LibraryDir: "/usr/lib"}, []string{"--shim: stat /no/shim"}},
		{"shim is a directory", emuexec.Config{Root: t.TempDir(), Shim: t.TempDir(), LibraryDir: "/usr/lib"}, []string{"is not a regular file"}},
		{"relative library dir", emuexec.Config{Root: t.TempDir(), LibraryDir: "lib"}, []string{"--library-dir: lib is not an absolute path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if !errors.Is(err, emuexec.ErrInvalidConfig) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %v, want it to contain %q", err, w)
				}
			}
		})
	}
	if err := (emuexec.Command{}).Validate(); err == nil || !strings.Contains(err.Error(), "after --") {
		t.Errorf("Command{}.Validate = %v, want it to say the program goes after --", err)
	}
	good := configFor(t.TempDir())
	if err := good.Validate(); err != nil {
		t.Errorf("a default config with a root: %v", err)
	}
}

// TestRunNeedsRoot runs the test binary as nobody (when it can) and checks
// the error says root is needed.
func TestRunNeedsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a test as another user")
	}
	// A directory nobody can read, for the root and the test binary.
	dir, err := os.MkdirTemp("", "drakit-exec-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root, _ := renderRootIn(t, dir, "dgx-h100")
	bin := filepath.Join(dir, "exec.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command(bin, "-test.run=^TestRunAsNobody$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DRAKIT_EXEC_TEST_ROOT="+root, "HOME="+dir, "XDG_CACHE_HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("test as nobody: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestRunAsNobody")) {
		t.Errorf("TestRunAsNobody did not pass:\n%s", out)
	}
}

// TestRunAsNobody is run by TestRunNeedsRoot as an unprivileged user.
func TestRunAsNobody(t *testing.T) {
	root := os.Getenv("DRAKIT_EXEC_TEST_ROOT")
	if root == "" || os.Geteuid() == 0 {
		t.Skip("run by TestRunNeedsRoot as an unprivileged user")
	}
	err := emuexec.Run(context.Background(), configFor(root), emuexec.Command{Args: []string{"true"}})
	if !errors.Is(err, emuexec.ErrNotPermitted) || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("Run as uid %d = %v, want ErrNotPermitted", os.Geteuid(), err)
	}
}

// configFor is the default configuration for root.
func configFor(root string) emuexec.Config {
	cfg := emuexec.DefaultConfig()
	cfg.Root = root
	return cfg
}

// TestRunWithShim runs on a root rendered without a library, with the shim
// given apart (--shim): it appears as libnvidia-ml.so.<driverVersion> with
// the .so.1 link, as the driver installs them.
func TestRunWithShim(t *testing.T) {
	needsRoot(t)
	p, err := profile.Builtin("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "node")
	if err := render.Render(context.Background(), p, render.Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	if _, err := emuexec.NewPlan(configFor(root)); err == nil || !strings.Contains(err.Error(), "--shim") {
		t.Errorf("plan for a root without a library and no --shim: %v, want an error naming --shim", err)
	}
	cfg := configFor(root)
	cfg.Shim = nvmltest.BuildShim(t)
	// Rendered without a shim, the root has no nvidia-smi to lay over the host's.
	plan, err := emuexec.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range plan.Mounts {
		if filepath.Base(m.Target) == "nvidia-smi" {
			t.Errorf("plan for a root without nvidia-smi mounts %s", m)
		}
	}
	var out bytes.Buffer
	lib := filepath.Join(cfg.LibraryDir, "libnvidia-ml.so.1")
	err = emuexec.Run(context.Background(), cfg, emuexec.Command{
		Args:   []string{"sh", "-c", "readlink " + lib + " && cmp " + lib + " " + cfg.Shim + " && echo same"},
		Stdout: &out, Stderr: &out,
	})
	want := "libnvidia-ml.so." + p.Spec.Driver.DriverVersion + "\nsame\n"
	if err != nil || out.String() != want {
		t.Errorf("Run = %v, printed %q; want %q", err, out.String(), want)
	}
}
