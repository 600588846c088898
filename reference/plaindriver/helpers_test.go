package plaindriver

import (
	"path/filepath"
	"strconv"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

const (
	testDriver = "plain.drakit.dev"
	testNode   = "127.0.0.1"
	uidA       = "aaaaaaaa-0000-0000-0000-000000000001"
	uidB       = "bbbbbbbb-0000-0000-0000-000000000002"
)

// testEnv is a state and a CDI directory below one temporary directory.
type testEnv struct {
	stateDir, cdiDir string
	devices          int
	defect           Defect
}

func newTestEnv(t *testing.T, defect Defect) *testEnv {
	t.Helper()
	base := t.TempDir()
	return &testEnv{stateDir: filepath.Join(base, "state"), cdiDir: filepath.Join(base, "cdi"), devices: 4, defect: defect}
}

// tryPlugin starts a plugin as Run does, without the kubelet plugin helper.
func (e *testEnv) tryPlugin(t *testing.T) (*plugin, error) {
	t.Helper()
	devs := nodeDevices(testNode, e.devices)
	if err := writeDeviceDirs(e.stateDir, devs); err != nil {
		t.Fatal(err)
	}
	cdi, err := newCDISpecs(e.cdiDir, testDriver, e.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	return newPlugin(pluginOptions{
		driverName: testDriver, poolName: testNode, devices: devs, stateDir: e.stateDir, cdi: cdi, defect: e.defect,
		fatal: func(err error) { t.Errorf("fatal error: %v", err) },
	})
}

func (e *testEnv) plugin(t *testing.T) *plugin {
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

func allocResult(driver, pool, request, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Driver: driver, Pool: pool, Request: request, Device: device}
}

// claimOf is an allocated claim with one result per device, request req<i>.
func claimOf(name, uid string, devices ...string) *resourceapi.ResourceClaim {
	var results []resourceapi.DeviceRequestAllocationResult
	for i, d := range devices {
		results = append(results, allocResult(testDriver, testNode, "req"+strconv.Itoa(i), d))
	}
	return allocatedClaim(name, uid, results...)
}

func allocatedClaim(name, uid string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: name, UID: types.UID(uid)},
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}},
		},
	}
}

func prepareOne(t *testing.T, p *plugin, claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	t.Helper()
	res, err := p.PrepareResourceClaims(t.Context(), []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatalf("PrepareResourceClaims: %v", err)
	}
	r, ok := res[claim.UID]
	if len(res) != 1 || !ok {
		t.Fatalf("PrepareResourceClaims returned %v for claim %s", res, claim.UID)
	}
	return r
}

func unprepare(t *testing.T, p *plugin, uids ...string) map[types.UID]error {
	t.Helper()
	var objs []kubeletplugin.NamespacedObject
	for _, uid := range uids {
		objs = append(objs, kubeletplugin.NamespacedObject{UID: types.UID(uid)})
	}
	res, err := p.UnprepareResourceClaims(t.Context(), objs)
	if err != nil {
		t.Fatalf("UnprepareResourceClaims: %v", err)
	}
	if len(res) != len(uids) {
		t.Fatalf("UnprepareResourceClaims returned %d results for %d claims", len(res), len(uids))
	}
	return res
}
