package allocator

import (
	"context"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

// The first-fit fragmentation cases of docs/allocator-anchors.md §3.5,
// allocated pod after pod with each result committed before the next.

// migInstance: 2 GPUs with counter sets m0..m7; "1g" devices per slot and
// an "8g" device per GPU, the device list interleaved across GPUs.
func migInstance() instance {
	var devs []resourceapi.Device
	var sets []resourceapi.CounterSet
	for g := range 2 {
		counters := map[string]resourceapi.Counter{}
		for s := range 8 {
			counters[fmt.Sprintf("m%d", s)] = resourceapi.Counter{Value: resource.MustParse("1")}
		}
		sets = append(sets, resourceapi.CounterSet{Name: fmt.Sprintf("gpu%d", g), Counters: counters})
	}
	for s := range 8 {
		for g := range 2 {
			devs = append(devs, resourceapi.Device{
				Name:       fmt.Sprintf("gpu%d-1g-s%d", g, s),
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"profile": strAttr("1g")},
				ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: fmt.Sprintf("gpu%d", g),
					Counters: map[string]resourceapi.Counter{fmt.Sprintf("m%d", s): {Value: resource.MustParse("1")}}}},
			})
		}
	}
	for g := range 2 {
		all := map[string]resourceapi.Counter{}
		for s := range 8 {
			all[fmt.Sprintf("m%d", s)] = resourceapi.Counter{Value: resource.MustParse("1")}
		}
		devs = append(devs, resourceapi.Device{
			Name:             fmt.Sprintf("gpu%d-8g", g),
			Attributes:       map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"profile": strAttr("8g")},
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: fmt.Sprintf("gpu%d", g), Counters: all}},
		})
	}
	cs := nodeSlice("a-counters", 2)
	cs.Spec.SharedCounters = sets
	return instance{
		features: defaultFeatures,
		classes: []*resourceapi.DeviceClass{
			gpuClass("mig-1g", `device.attributes["gpu.example.com"].profile == "1g"`),
			gpuClass("mig-8g", `device.attributes["gpu.example.com"].profile == "8g"`),
		},
		slices: []*resourceapi.ResourceSlice{cs, nodeSlice("b-devices", 2, devs...)},
		claims: []*resourceapi.ResourceClaim{
			claimOf("pod1", nil, req("r", "mig-1g", 1)),
			claimOf("pod2", nil, req("r", "mig-1g", 1)),
			claimOf("pod3", nil, req("r", "mig-8g", 1)),
		},
	}
}

// nicInstance: gpu-0 (numa 0), gpu-1 (numa 1), nic-0 (numa 0); pod 1 wants
// any GPU, pod 2 a GPU and a NIC on the same NUMA node.
func nicInstance() instance {
	dev := func(name, kind string, numa int64) resourceapi.Device {
		return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"kind": strAttr(kind), "numa": intAttr(numa),
		}}
	}
	return instance{
		features: defaultFeatures,
		classes: []*resourceapi.DeviceClass{
			gpuClass("gpu", `device.attributes["gpu.example.com"].kind == "gpu"`),
			gpuClass("nic", `device.attributes["gpu.example.com"].kind == "nic"`),
		},
		slices: []*resourceapi.ResourceSlice{nodeSlice("s", 1, dev("gpu-0", "gpu", 0), dev("gpu-1", "gpu", 1), dev("nic-0", "nic", 0))},
		claims: []*resourceapi.ResourceClaim{
			claimOf("pod1", nil, req("gpu", "gpu", 1)),
			claimOf("pod2", matchAttr(testDriver+"/numa"), req("gpu", "gpu", 1), req("nic", "nic", 1)),
		},
	}
}

// allocatePodByPod allocates each claim alone, committing its result, and
// returns the index of the first claim that did not fit (-1 if all did).
func allocatePodByPod(t *testing.T, in instance, mode Mode) (int, []string) {
	t.Helper()
	state := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID]()}
	var got []string
	for i, claim := range in.claims {
		step := in
		step.state = state
		a := step.newRef(t, Options{Mode: mode})
		res, err := a.Allocate(context.Background(), testNodeObj(), []*resourceapi.ResourceClaim{claim})
		if err != nil {
			t.Fatalf("pod %d: %v", i+1, err)
		}
		if res == nil {
			if a.Explain() == "" {
				t.Errorf("pod %d: failed without explanation", i+1)
			}
			return i, got
		}
		got = append(got, devicesOf(res))
		commit(&state, res)
	}
	return -1, got
}

func TestFragmentationCases(t *testing.T) {
	for name, in := range map[string]instance{"mig-interleaved": migInstance(), "gpu-nic-numa": nicInstance()} {
		t.Run(name, func(t *testing.T) {
			// First fit reproduces upstream's fragmentation: the last pod fails.
			if failed, got := allocatePodByPod(t, in, ModeFirstFit); failed != len(in.claims)-1 {
				t.Errorf("first-fit: pod %d failed (allocations %v), want the last pod to fail like upstream", failed+1, got)
			}
			if failed, got := allocatePodByPod(t, in, ModePacking); failed != -1 {
				t.Errorf("packing: pod %d failed (allocations %v), want all pods to fit", failed+1, got)
			}
		})
	}
}

// TestPackingKeepsGPUTogether: in packing mode the two 1g slices land on
// the same GPU.
func TestPackingKeepsGPUTogether(t *testing.T) {
	in := migInstance()
	in.claims = in.claims[:2]
	_, got := allocatePodByPod(t, in, ModePacking)
	if len(got) != 2 || !strings.Contains(got[0], "gpu0") || !strings.Contains(got[1], "gpu0") {
		t.Errorf("allocations %v, want both 1g slices on gpu0", got)
	}
}
