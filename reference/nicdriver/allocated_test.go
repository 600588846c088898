package nicdriver

import (
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"drakit.dev/drakit/oracle/allocator/bench"
)

func capacityClaim(name, uid, class string, count int64, selector string, bandwidth string) *resourceapi.ResourceClaim {
	req := &resourceapi.ExactDeviceRequest{DeviceClassName: class, Count: count}
	if selector != "" {
		req.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}}
	}
	if bandwidth != "" {
		req.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			CapacityBandwidth: resource.MustParse(bandwidth),
		}}
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: name, UID: types.UID(uid)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "req", Exactly: req,
		}}}},
	}
}

// TestPrepareWhatTheSchedulerAllocates: the upstream allocator
// (k8s.io/dynamic-resource-allocation/structured, consumable capacity on)
// allocates claims from the published pool through the driver's
// DeviceClasses: bandwidth requests are rounded up by the request policy
// (1.5G → 2G), a share that asks for nothing gets the default (1G), a
// share that does not fit what is left is not allocated, VFs are
// exclusive. The driver prepares what it allocated.
func TestPrepareWhatTheSchedulerAllocates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t)
	s := testScenario(p.Resources())
	s.Default()
	onPF0 := `device.attributes["nic.drakit.dev"].interfaceName == "ens1f0"`
	s.Claims = []*resourceapi.ResourceClaim{
		capacityClaim("odd", uidA, "nic.drakit.dev", 1, onPF0, "1500M"),
		capacityClaim("default", uidB, "nic.drakit.dev", 1, onPF0, ""),
		capacityClaim("big", uidC, "nic.drakit.dev", 1, onPF0, "98G"), // 3G taken: does not fit
		capacityClaim("vfs", "dddddddd-0000-0000-0000-000000000004", "vf.nic.drakit.dev", 3,
			`device.attributes["nic.drakit.dev"].rdma && device.attributes["nic.drakit.dev"].pfDevice == "nic-0000-3b-00-1"`, ""),
	}
	s.Default()
	if errs := s.Validate(); len(errs) > 0 {
		t.Fatalf("scenario: %v", errs.ToAggregate())
	}
	_, ctx := ktesting.NewTestContext(t)
	results, _, err := s.OneByOne(ctx, bench.UpstreamFunc())
	if err != nil {
		t.Fatal(err)
	}
	if results[2] != nil {
		t.Errorf("claim big was allocated (%+v), want it not to fit", results[2].Devices.Results)
	}
	wantBandwidth := map[string]string{"odd": "2G", "default": "1G"}
	for i, c := range s.Claims {
		if results[i] == nil {
			continue
		}
		c = c.DeepCopy()
		c.Status.Allocation = results[i]
		devs := prepareOK(t, p, c)
		if want, ok := wantBandwidth[c.Name]; ok {
			r := results[i].Devices.Results[0]
			if r.ShareID == nil || r.Device != pf0Dv {
				t.Fatalf("claim %s: result %+v, want a share of %s", c.Name, r, pf0Dv)
			}
			q := r.ConsumedCapacity[CapacityBandwidth]
			if q.String() != want {
				t.Errorf("claim %s consumes %s, want %s", c.Name, q.String(), want)
			}
			env := e.spec(t, "share", string(c.UID)).Devices[0].ContainerEdits.Env
			if !slices.Contains(env, "DRAKIT_DEVICE_NIC_0000_3B_00_0_BANDWIDTH="+want) {
				t.Errorf("claim %s: env %v has no bandwidth %s", c.Name, env, want)
			}
			continue
		}
		if len(devs) != 3 || e.fs.numVFs("0000:3b:00.1") != "4" {
			t.Errorf("claim vfs: %d devices, sriov_numvfs %s; want 3 VFs of 4 created", len(devs), e.fs.numVFs("0000:3b:00.1"))
		}
	}
}
