package plaindriver

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"drakit.dev/drakit/reference/pluginharness"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

const (
	testDriver = "plain.drakit.dev"
	testNode   = "127.0.0.1"
	uidA       = "aaaaaaaa-0000-0000-0000-000000000001"
	uidB       = "bbbbbbbb-0000-0000-0000-000000000002"
)

// testPlugin is the harness's plugin over the plain driver's node.
type testPlugin = pluginharness.Plugin[pluginharness.PreparedDevice, *pluginharness.PreparedDevice]

// testEnv is a state and a CDI directory below one temporary directory.
type testEnv struct {
	stateDir, cdiDir string
	devices          int
	style            Style
	defect           Defect
}

func newTestEnv(t *testing.T, defect Defect) *testEnv {
	t.Helper()
	base := t.TempDir()
	return &testEnv{stateDir: filepath.Join(base, "state"), cdiDir: filepath.Join(base, "cdi"), devices: 4, defect: defect}
}

// tryPlugin starts a plugin as run does, without the kubelet plugin helper.
func (e *testEnv) tryPlugin(t *testing.T) (*testPlugin, error) {
	t.Helper()
	p, _, err := e.tryNode(t)
	return p, err
}

// tryNode is tryPlugin that also returns the driver's node.
func (e *testEnv) tryNode(t *testing.T) (*testPlugin, *node, error) {
	t.Helper()
	cfg := Config{Kubelet: pluginharness.Kubelet{DriverName: testDriver, NodeName: testNode, CDIDir: e.cdiDir},
		Devices: e.devices, StateDir: e.stateDir, Style: e.style, Defect: e.defect}
	n := newNode(cfg)
	if err := writeDeviceDirs(e.stateDir, n.devices); err != nil {
		t.Fatal(err)
	}
	hcfg := harnessConfig(cfg, n)
	hcfg.Fatal = func(err error) { t.Errorf("fatal error: %v", err) }
	p, err := pluginharness.New[pluginharness.PreparedDevice, *pluginharness.PreparedDevice](t.Context(), n, hcfg)
	return p, n, err
}

// wrapped is the plugin run serves: the harness's wrapped for the style
// and defect, with a prepare delay of delay.
func (e *testEnv) wrapped(t *testing.T, delay time.Duration) *plugin {
	t.Helper()
	p, n, err := e.tryNode(t)
	if err != nil {
		t.Fatal(err)
	}
	return newPlugin(p, n, testDriver, delay)
}

func (e *testEnv) plugin(t *testing.T) *testPlugin {
	t.Helper()
	p, err := e.tryPlugin(t)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *testEnv) specPath(uid string) string {
	return filepath.Join(e.cdiDir, "k8s."+testDriver+"-claim_"+uid+".json")
}

// claimOf is an allocated claim with one result per device, request req<i>.
func claimOf(name, uid string, devices ...string) *resourceapi.ResourceClaim {
	var results []resourceapi.DeviceRequestAllocationResult
	for i, d := range devices {
		results = append(results, harnesstest.AllocResult(testDriver, testNode, "req"+strconv.Itoa(i), d))
	}
	return harnesstest.AllocatedClaim(name, uid, results...)
}
