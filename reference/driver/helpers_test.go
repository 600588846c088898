package driver

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
	"drakit.dev/drakit/reference/pluginharness"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

const (
	testDriver = "gpu.drakit.dev"
	testNode   = "127.0.0.1"
)

// staticDiscoverer returns a fixed inventory.
type staticDiscoverer struct{ inv *Inventory }

func (s staticDiscoverer) Discover(context.Context) (*Inventory, error) { return s.inv, nil }

// testInventory has three GPUs; the third has minor 3 but index 2, so tests
// notice when index and minor are mixed up.
func testInventory() *Inventory {
	return &Inventory{
		DriverVersion:     "570.172.08",
		CUDADriverVersion: 12080,
		GPUs: []GPU{
			{Index: 0, Minor: 0, UUID: "GPU-00000000-1111-2222-3333-444444444444", ProductName: "NVIDIA H100 80GB HBM3",
				Architecture: "Hopper", Brand: "Tesla", CCMajor: 9, CCMinor: 0, MemoryBytes: 85520809984,
				PCIBusID: "0000:1b:00.0", PCIeRoot: "pci0000:00", NUMANode: 0},
			{Index: 1, Minor: 1, UUID: "GPU-11111111-1111-2222-3333-444444444444", ProductName: "NVIDIA H100 80GB HBM3",
				Architecture: "Hopper", Brand: "Tesla", CCMajor: 9, CCMinor: 0, MemoryBytes: 85520809984,
				PCIBusID: "0000:43:00.0", PCIeRoot: "pci0000:00", NUMANode: 0},
			{Index: 2, Minor: 3, UUID: "GPU-33333333-1111-2222-3333-444444444444", ProductName: "NVIDIA H100 80GB HBM3",
				Architecture: "Hopper", Brand: "Tesla", CCMajor: 9, CCMinor: 0, MemoryBytes: 85520809984,
				PCIBusID: "0000:9a:00.0", PCIeRoot: "pci0000:80", NUMANode: 1},
		},
	}
}

// testRoot is an emulated driver root: the NVML library as a versioned file
// plus symlink, the state file and the device nodes.
type testRoot struct {
	dir string
	lib string // resolved library path
	// charDevices is true when the device nodes are real character devices
	// (mknod needs CAP_MKNOD); otherwise they are regular files.
	charDevices bool
}

func newTestRoot(t *testing.T, minors ...int) *testRoot {
	t.Helper()
	r := &testRoot{dir: t.TempDir(), charDevices: true}
	libDir := filepath.Join(r.dir, "usr/lib/x86_64-linux-gnu")
	mkdir(t, libDir)
	r.lib = filepath.Join(libDir, "libnvidia-ml.so.570.172.08")
	writeFile(t, r.lib, "shim")
	if err := os.Symlink("libnvidia-ml.so.570.172.08", filepath.Join(libDir, NVMLLibraryName)); err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(r.dir, "run/drakit-emulator"))
	writeFile(t, filepath.Join(r.dir, containerStatePath), "drakit-nvml-state v1\n")
	mkdir(t, filepath.Join(r.dir, "dev"))
	r.mknod(t, "nvidiactl", 255)
	for _, m := range minors {
		r.mknod(t, "nvidia"+strconv.Itoa(m), m)
	}
	return r
}

func (r *testRoot) mknod(t *testing.T, name string, minor int) {
	t.Helper()
	p := filepath.Join(r.dir, "dev", name)
	err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(195, uint32(minor))))
	if errors.Is(err, unix.EPERM) {
		r.charDevices = false
		writeFile(t, p, "")
		return
	}
	if err != nil {
		t.Fatalf("mknod %s: %v", p, err)
	}
}

func builtinProfile(t testing.TB, name string) *profile.Profile {
	t.Helper()
	p, err := profile.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// renderProfile renders p with the emulator's NVML shim into a new emulator
// root and returns the root. It skips the test where rendering cannot create
// the device nodes (no CAP_MKNOD).
func renderProfile(t *testing.T, p *profile.Profile) string {
	t.Helper()
	shim := nvmltest.BuildShim(t)
	root := filepath.Join(t.TempDir(), "emulator")
	if err := render.Render(t.Context(), p, render.Options{Root: root, ShimLibrary: shim}); err != nil {
		if errors.Is(err, render.ErrDeviceNodes) {
			t.Skipf("rendering needs CAP_MKNOD: %v", err)
		}
		t.Fatal(err)
	}
	return root
}

// renderAndDiscover renders p (renderProfile) and discovers the root through
// the real NVML shim and sysfs. A process keeps the first NVML library it
// loads, so it points that library at this root through nvmltest.RootEnv;
// tests that call it must not be parallel.
func renderAndDiscover(t *testing.T, p *profile.Profile) (root string, inv *Inventory) {
	t.Helper()
	root = renderProfile(t, p)
	t.Setenv(nvmltest.RootEnv, root)
	disc, _, err := NewNVMLDiscoverer(root, filepath.Join(root, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err = disc.Discover(t.Context())
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	return root, inv
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pluginEnv is a plugin over a test root, a CDI dir and a plugin dir.
type pluginEnv struct {
	root      *testRoot
	cdiDir    string
	pluginDir string
	fatal     *harnesstest.FatalRecorder
	// inventory replaces testInventory() when set; mig is the plugin's
	// MIG device manager (nil: none).
	inventory *Inventory
	mig       *migOps
}

func newPluginEnv(t *testing.T) *pluginEnv {
	t.Helper()
	return &pluginEnv{
		root:      newTestRoot(t, 0, 1, 3),
		cdiDir:    filepath.Join(t.TempDir(), "cdi"),
		pluginDir: t.TempDir(),
		fatal:     &harnesstest.FatalRecorder{},
	}
}

// testPlugin is the harness's plugin over the driver's hardware, as Run
// starts it.
type testPlugin struct {
	*pluginharness.Plugin[preparedDevice, *preparedDevice]
	hw *hardware
}

// plugin starts a new plugin instance (as a driver restart would) over the
// environment's directories.
func (e *pluginEnv) plugin(t *testing.T) testPlugin {
	t.Helper()
	p, err := e.tryPlugin(t)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *pluginEnv) tryPlugin(t *testing.T) (testPlugin, error) {
	t.Helper()
	inv := e.inventory
	if inv == nil {
		inv = testInventory()
	}
	return startPlugin(t, staticDiscoverer{inv}, e.root.dir, e.root.lib, e.cdiDir, e.pluginDir, e.mig, e.fatal)
}

// startPlugin starts a plugin as run does, without the kubelet plugin
// helper.
func startPlugin(t *testing.T, disc Discoverer, driverRoot, nvmlLib, cdiDir, pluginDir string, mig *migOps, fatal *harnesstest.FatalRecorder) (testPlugin, error) {
	t.Helper()
	hw := &hardware{driverName: testDriver, poolName: testNode, disc: disc, driverRoot: driverRoot, nvmlLib: nvmlLib, mig: mig}
	cfg := harnessConfig(testDriver, testNode, pluginDir, cdiDir)
	cfg.Fatal = fatal.Cancel
	p, err := pluginharness.New[preparedDevice, *preparedDevice](t.Context(), hw, cfg)
	return testPlugin{p, hw}, err
}

func (e *pluginEnv) specPath(uid string) string {
	return filepath.Join(e.cdiDir, "k8s.gpu.drakit.dev-claim_"+uid+".json")
}

// saveCheckpoint writes claims as the driver's checkpoint into pluginDir.
func saveCheckpoint(t *testing.T, pluginDir string, claims map[string]preparedClaim) {
	t.Helper()
	cfg := harnessConfig(testDriver, testNode, pluginDir, "")
	cp := &pluginharness.Checkpoint[preparedDevice]{
		Path: filepath.Join(pluginDir, pluginharness.CheckpointFile), Version: cfg.CheckpointVersion, Checksum: cfg.Checksum,
	}
	if err := cp.Save(claims); err != nil {
		t.Fatal(err)
	}
}

// recorded is a checkpointed device of the test pool.
func recorded(request, device string, mig *migRecord) preparedDevice {
	return preparedDevice{PreparedDevice: pluginharness.PreparedDevice{Request: request, Pool: testNode, Device: device}, MIG: mig}
}

// freshProcessEnv names the test that a re-executed test binary runs.
const freshProcessEnv = "DRAKIT_TEST_FRESH_PROCESS"

// inFreshProcess runs the calling test again, alone, in a new process of the
// test binary and reports whether the caller is that process (then it does
// the work). In the parent it fails or skips as the child did and returns
// false.
func inFreshProcess(t *testing.T) bool {
	t.Helper()
	if os.Getenv(freshProcessEnv) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), freshProcessEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("%s in a fresh process: %v\n%s", t.Name(), err, out)
	case bytes.Contains(out, []byte("--- SKIP: "+t.Name())):
		t.Skipf("skipped in a fresh process:\n%s", out)
	case !bytes.Contains(out, []byte("--- PASS: "+t.Name())):
		t.Fatalf("%s in a fresh process did not pass:\n%s", t.Name(), out)
	}
	return false
}

// readState parses the shim's state file under root: what the emulated
// kernel driver holds.
func readState(t *testing.T, root string) *nvmlstate.State {
	t.Helper()
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(nvmlstate.RelativePath)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := nvmlstate.Parse(f)
	if err != nil {
		t.Fatalf("parse state file: %v", err)
	}
	return s
}
