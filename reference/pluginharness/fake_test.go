package pluginharness_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/reference/pluginharness"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

const (
	testDriver  = "test.drakit.dev"
	testNode    = "127.0.0.1"
	testVersion = "test.drakit.dev/checkpoint/v1"
	uidA        = "aaaaaaaa-0000-0000-0000-000000000001"
	uidB        = "bbbbbbbb-0000-0000-0000-000000000002"
	uidC        = "cccccccc-0000-0000-0000-000000000003"
)

// record is the fake driver's device record: the harness's part plus what
// its Prepare did, which its Unprepare undoes.
type record struct {
	pluginharness.PreparedDevice
	Set bool `json:"set,omitempty"`
}

// fakeDriver is a Driver over fake hardware: a set of "uid/device" entries
// that Prepare sets (one per device, saving before and after each) and
// Unprepare clears. Errors can be injected per method.
type fakeDriver struct {
	devices []string // published, in the pool named testNode

	mu sync.Mutex
	// hardware holds "uid/device" for every device a prepare set up.
	hardware map[string]bool
	// refuse makes Admit refuse these devices.
	refuse map[string]bool
	// failPrepare makes Prepare fail after setting up its first device;
	// failUnprepare makes Unprepare fail without undoing anything;
	// failEdits makes Edits fail.
	failPrepare, failUnprepare, failEdits bool
	// discovered is the prepared map Discover was given.
	discovered map[string]pluginharness.Claim[record]
	// calls counts the calls by method name.
	calls map[string]int
}

func newFakeDriver() *fakeDriver {
	return &fakeDriver{
		devices:  []string{"dev-0", "dev-1", "dev-2", "dev-3"},
		hardware: map[string]bool{},
		refuse:   map[string]bool{},
		calls:    map[string]int{},
	}
}

var _ pluginharness.Driver[record] = (*fakeDriver)(nil)

func (f *fakeDriver) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// set returns the hardware's entries, sorted.
func (f *fakeDriver) set() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.hardware))
}

func (f *fakeDriver) Discover(_ context.Context, prepared map[string]pluginharness.Claim[record]) (resourceslice.DriverResources, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["Discover"]++
	f.discovered = maps.Clone(prepared)
	devs := make([]resourceapi.Device, 0, len(f.devices))
	for _, d := range f.devices {
		devs = append(devs, resourceapi.Device{Name: d})
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		testNode: {Slices: []resourceslice.Slice{{Devices: devs}}},
	}}, nil
}

func (f *fakeDriver) Admit(device string, adminAccess bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse[device] {
		return fmt.Errorf("device %s: refused (admin access %v)", device, adminAccess)
	}
	return nil
}

func (f *fakeDriver) Prepare(_ context.Context, uid string, claim *pluginharness.Claim[record], save func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["Prepare"]++
	if len(claim.Devices) == 0 {
		return nil
	}
	claim.Incomplete = true
	if err := save(); err != nil {
		return err
	}
	for i := range claim.Devices {
		f.hardware[uid+"/"+claim.Devices[i].Device] = true
		claim.Devices[i].Set = true
		if err := save(); err != nil {
			return err
		}
		if f.failPrepare {
			return fmt.Errorf("set up device %s: injected failure", claim.Devices[i].Device)
		}
	}
	claim.Incomplete = false
	return nil
}

func (f *fakeDriver) Edits(_ context.Context, uid string, claim pluginharness.Claim[record]) (pluginharness.Edits, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["Edits"]++
	if f.failEdits {
		return pluginharness.Edits{}, fmt.Errorf("edits of claim %s: injected failure", uid)
	}
	e := pluginharness.Edits{Claim: cdispec.ContainerEdits{Env: []string{"FAKE_CLAIM=" + uid}}}
	seen := map[string]bool{}
	for _, d := range claim.Devices {
		if seen[d.Device] {
			continue
		}
		seen[d.Device] = true
		e.Devices = append(e.Devices, pluginharness.DeviceEdits{Device: d.Device, Edits: cdispec.ContainerEdits{Env: []string{"FAKE_DEVICE=" + d.Device}}})
	}
	return e, nil
}

func (f *fakeDriver) Unprepare(_ context.Context, uid string, claim pluginharness.Claim[record]) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["Unprepare"]++
	if f.failUnprepare {
		return fmt.Errorf("undo claim %s: injected failure", uid)
	}
	for _, d := range claim.Devices {
		if d.Set {
			delete(f.hardware, uid+"/"+d.Device)
		}
	}
	return nil
}

// testPlugin is the harness plugin over the fake driver.
type testPlugin = pluginharness.Plugin[record, *record]

// env is a CDI and a checkpoint directory (cdi and state below one
// temporary directory), the fake driver and the configuration every plugin
// of the test starts with.
type env struct {
	drv   *fakeDriver
	cfg   pluginharness.Config
	fatal *harnesstest.FatalRecorder
}

func newEnv(t testing.TB) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{drv: newFakeDriver(), fatal: &harnesstest.FatalRecorder{}}
	e.cfg = pluginharness.Config{
		DriverName:        testDriver,
		NodeName:          testNode,
		CDIDir:            filepath.Join(base, "cdi"),
		CheckpointDir:     filepath.Join(base, "state"),
		CheckpointVersion: testVersion,
		Fatal:             e.fatal.Cancel,
	}
	if err := os.Mkdir(e.cfg.CheckpointDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

// tryPlugin starts a plugin over the environment, as a driver (re)start
// does.
func (e *env) tryPlugin(t testing.TB) (*testPlugin, error) {
	t.Helper()
	return pluginharness.New[record, *record](t.Context(), e.drv, e.cfg)
}

func (e *env) plugin(t testing.TB) *testPlugin {
	t.Helper()
	p, err := e.tryPlugin(t)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) checkpointPath() string {
	return filepath.Join(e.cfg.CheckpointDir, pluginharness.CheckpointFile)
}

func (e *env) specPath(uid string) string {
	return filepath.Join(e.cfg.CDIDir, "k8s."+testDriver+"-claim_"+uid+".json")
}

// deviceID is the CDI device ID of a claim's device.
func deviceID(uid, device string) string { return "k8s." + testDriver + "/claim=" + uid + "-" + device }
