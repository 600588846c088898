package pluginharness_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/reference/pluginharness"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// poolDriver is the fake driver that also admits the devices of one
// shared pool, as the GPU driver admits its clique's IMEX channels.
type poolDriver struct {
	*fakeDriver
	pool string
}

func (d poolDriver) AdmitPool(pool, device string) error {
	if pool != d.pool {
		return fmt.Errorf("device %s of pool %s is not for this node (its shared pool is %s)", device, pool, d.pool)
	}
	return nil
}

// TestPrepareSharedPool: a PoolAdmitter's admitted device of another pool
// is prepared with its pool (a CDI device, the driver's edits); a refused
// one fails the claim with the driver's reason.
func TestPrepareSharedPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p, err := pluginharness.New[record, *record](t.Context(), poolDriver{e.drv, "shared"}, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("c", uidA,
		harnesstest.AllocResult(testDriver, testNode, "gpu", "dev-0"),
		harnesstest.AllocResult(testDriver, "shared", "channel", "channel-3")))
	if got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	want := []kubeletplugin.Device{
		{Requests: []string{"gpu"}, PoolName: testNode, DeviceName: "dev-0", CDIDeviceIDs: []string{deviceID(uidA, "dev-0")}},
		{Requests: []string{"channel"}, PoolName: "shared", DeviceName: "channel-3", CDIDeviceIDs: []string{deviceID(uidA, "channel-3")}},
	}
	if diff := cmp.Diff(want, got.Devices); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	refused := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("r", uidB,
		harnesstest.AllocResult(testDriver, "other", "channel", "channel-3")))
	wantErr := "prepare claim test/r (" + uidB + "): device channel-3 of pool other is not for this node (its shared pool is shared)"
	if refused.Err == nil || refused.Err.Error() != wantErr {
		t.Errorf("refused device: %v, want %q", refused.Err, wantErr)
	}
}
