package allocator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"default", DefaultOptions(), ""},
		{"packing with budget", Options{Mode: ModePacking, StepBudget: 10}, ""},
		{"unknown mode", Options{Mode: Mode(7)}, "mode"},
		{"negative budget", Options{StepBudget: -1}, "stepBudget"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate() = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
	for _, s := range []string{"first-fit", "packing"} {
		m, err := ParseMode(s)
		if err != nil || m.String() != s {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseMode("best"); err == nil {
		t.Error("ParseMode(best) succeeded")
	}
}

func TestStepBudget(t *testing.T) {
	in := h2(12, 8)
	a := in.newRef(t, Options{StepBudget: 3})
	_, err := a.Allocate(context.Background(), testNodeObj(), in.claims)
	if !errors.Is(err, ErrStepBudget) {
		t.Fatalf("err = %v, want ErrStepBudget", err)
	}
}

func TestContextCancelled(t *testing.T) {
	in := h1(8, 7)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := in.newRef(t, DefaultOptions()).Allocate(ctx, testNodeObj(), in.claims)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestExplain(t *testing.T) {
	tests := []struct {
		name string
		in   instance
		want []string
		// complete skips the lazy phase.
		complete bool
	}{
		{"too many claims", h5(8, 9, 0), []string{"need at least 9 devices", "only 8"}, false},
		{"too many claims, one spare device of another class", func() instance {
			in := h5(8, 9, 0)
			in.slices[0].Spec.Devices = append(in.slices[0].Spec.Devices, resourceapi.Device{Name: "other"})
			in.classes[0] = gpuClass("gpu", `"index" in device.attributes["gpu.example.com"]`)
			return in
		}(), []string{"request r and 8 identical request(s)", "need 9 more"}, false},
		{"overlapping requests", overlapping(), []string{"claim default/b, request r", "devices gpu-0, gpu-1: taken by claim default/a, earlier in this call"}, false},
		{"overlapping requests, complete search", overlapping(), []string{"need 3 distinct devices", "at most 2"}, true},
		{"count above devices", h5(8, 0, 9), []string{"request r", "needs 9"}, false},
		{"selectors match nothing", func() instance {
			in := h1(8, 1)
			in.claims[0].Spec.Devices.Requests[1].Exactly.Selectors = cels(`device.attributes["gpu.example.com"].index == 99`)
			return in
		}(), []string{"request special", "0 match its selectors"}, false},
		{"counter set", h4Unsat(), []string{"counter set", "memory"}, false},
		{"constraint", func() instance {
			in := h3(8, 4)
			in.claims[0].Spec.Devices.Requests[0].Exactly.Count = 5
			return in
		}(), []string{"claim default/c"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.in.newRef(t, DefaultOptions())
			a.completeOnly = tc.complete
			res, why, err := a.AllocateExplained(context.Background(), testNodeObj(), tc.in.claims)
			if err != nil || res != nil {
				t.Fatalf("got %v, %v; want no allocation", res, err)
			}
			if why != a.Explain() {
				t.Errorf("AllocateExplained %q != Explain %q", why, a.Explain())
			}
			for _, w := range tc.want {
				if !strings.Contains(why, w) {
					t.Errorf("explanation %q does not mention %q", why, w)
				}
			}
		})
	}
}

// overlapping: two claims whose requests each fit, but not together (3
// devices wanted out of the same 2).
func overlapping() instance {
	in := h5(8, 0, 0)
	in.claims = []*resourceapi.ResourceClaim{
		claimOf("a", nil, req("r", "gpu", 1, `device.attributes["gpu.example.com"].index < 2`)),
		claimOf("b", nil, req("r", "gpu", 2, `device.attributes["gpu.example.com"].index <= 1`)),
	}
	return in
}

func h4Unsat() instance {
	in := h4(8, 7)
	in.slices[0].Spec.SharedCounters[0].Counters["memory"] = resourceapi.Counter{Value: resource.MustParse("60")}
	return in
}

// TestUpstreamErrors: invalid input gives the same errors as upstream.
func TestUpstreamErrors(t *testing.T) {
	tests := map[string]func(in *instance){
		"missing class": func(in *instance) { in.claims[0].Spec.Devices.Requests[0].Exactly.DeviceClassName = "nope" },
		"bad CEL":       func(in *instance) { in.claims[0].Spec.Devices.Requests[0].Exactly.Selectors = cels(`device.nope(`) },
		"runtime error": func(in *instance) {
			in.claims[0].Spec.Devices.Requests[0].Exactly.Selectors = cels(`device.attributes["gpu.example.com"].missing`)
		},
		"too many devices": func(in *instance) { in.claims[0].Spec.Devices.Requests[0].Exactly.Count = 40 },
		"empty constraint": func(in *instance) {
			in.claims[0].Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{}}
		},
		"distinctAttribute with the stable feature set": func(in *instance) {
			in.features = stableFeatures
			attr := resourceapi.FullyQualifiedName(testDriver + "/numa")
			in.claims[0].Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: &attr}}
		},
		"subrequests without feature": func(in *instance) {
			in.features.PrioritizedList = false
			in.claims[0].Spec.Devices.Requests[0] = resourceapi.DeviceRequest{Name: "r", FirstAvailable: []resourceapi.DeviceSubRequest{{
				Name: "s", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
		},
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			in := h5(4, 1, 0)
			mutate(&in)
			_, refErr := in.newRef(t, DefaultOptions()).Allocate(context.Background(), testNodeObj(), in.claims)
			_, upErr := in.newUpstream(t).Allocate(context.Background(), testNodeObj(), in.claims)
			if refErr == nil || upErr == nil {
				t.Fatalf("reference %v, upstream %v: want both to fail", refErr, upErr)
			}
			if refErr.Error() != upErr.Error() {
				t.Errorf("error text differs:\nreference %v\nupstream  %v", refErr, upErr)
			}
		})
	}
}

// TestDistinctWithoutConsumableCapacity: upstream rejects distinctAttribute
// only when its stable variant serves the feature set; with a feature that
// needs the incubating variant (binding conditions) and ConsumableCapacity
// still off, both allocators honour the constraint.
func TestDistinctWithoutConsumableCapacity(t *testing.T) {
	in := h5(4, 0, 2)
	in.features = stableFeatures
	in.features.DeviceBindingAndStatus = true
	attr := resourceapi.FullyQualifiedName(testDriver + "/index")
	in.claims[0].Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: &attr}}
	ref, refErr := in.newRef(t, DefaultOptions()).Allocate(context.Background(), testNodeObj(), in.claims)
	up, upErr := in.newUpstream(t).Allocate(context.Background(), testNodeObj(), in.claims)
	if refErr != nil || upErr != nil {
		t.Fatalf("reference %v, upstream %v: want both to succeed", refErr, upErr)
	}
	if diff := cmp.Diff(up, ref); diff != "" {
		t.Errorf("results differ (-upstream +reference):\n%s", diff)
	}
}

// TestRandomAgainstUpstream: seeded small random instances (selectors,
// counts, matchAttribute and distinctAttribute, counters, several claims,
// firstAvailable): the reference allocator, in both its lazy and its
// complete phase, returns exactly upstream's first-fit allocation.
func TestRandomAgainstUpstream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 37))
	for i := range 400 {
		in := randomInstance(rng)
		up, upErr := in.newUpstream(t).Allocate(context.Background(), testNodeObj(), in.claims)
		for _, complete := range []bool{false, true} {
			a := in.newRef(t, DefaultOptions())
			a.completeOnly = complete
			ref, refErr := a.Allocate(context.Background(), testNodeObj(), in.claims)
			if (refErr == nil) != (upErr == nil) {
				t.Fatalf("instance %d (complete=%v): reference err %v, upstream err %v", i, complete, refErr, upErr)
			}
			if got, want := devicesOf(ref), devicesOf(up); got != want || (ref == nil) != (up == nil) {
				t.Fatalf("instance %d (complete=%v):\nreference %s\nupstream  %s\nclaims %s", i, complete, got, want, describe(in))
			}
		}
	}
}

func randomInstance(rng *rand.Rand) instance {
	n := 2 + rng.IntN(6)
	devs := devicesN(n, func(i int) map[string]resourceapi.DeviceAttribute {
		return map[string]resourceapi.DeviceAttribute{"numa": intAttr(int64(rng.IntN(3))), "special": boolAttr(rng.IntN(3) == 0)}
	})
	in := instance{features: defaultFeatures, classes: []*resourceapi.DeviceClass{gpuClass("gpu")}}
	if rng.IntN(3) == 0 {
		cs := nodeSlice("a-counters", 2)
		cs.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "set", Counters: map[string]resourceapi.Counter{
			"mem": {Value: *resource.NewQuantity(int64(2+rng.IntN(2*n)), resource.DecimalSI)}}}}
		for i := range devs {
			devs[i].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "set", Counters: map[string]resourceapi.Counter{
				"mem": {Value: *resource.NewQuantity(int64(1+rng.IntN(3)), resource.DecimalSI)}}}}
		}
		in.slices = []*resourceapi.ResourceSlice{cs, nodeSlice("b-devices", 2, devs...)}
	} else {
		in.slices = []*resourceapi.ResourceSlice{nodeSlice("s", 1, devs...)}
	}
	selectors := []string{"", specialSel, `device.attributes["gpu.example.com"].numa == 1`, `!` + specialSel}
	for c := range 1 + rng.IntN(3) {
		var reqs []resourceapi.DeviceRequest
		for r := range 1 + rng.IntN(3) {
			name := fmt.Sprintf("r%d", r)
			var rq resourceapi.DeviceRequest
			if sel := selectors[rng.IntN(len(selectors))]; sel != "" {
				rq = req(name, "gpu", int64(1+rng.IntN(2)), sel)
			} else {
				rq = req(name, "gpu", int64(1+rng.IntN(2)))
			}
			if rng.IntN(4) == 0 {
				rq = resourceapi.DeviceRequest{Name: name, FirstAvailable: []resourceapi.DeviceSubRequest{
					{Name: "big", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(2 + rng.IntN(2)), Selectors: cels(specialSel)},
					{Name: "small", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
				}}
			}
			reqs = append(reqs, rq)
		}
		var cons []resourceapi.DeviceConstraint
		switch rng.IntN(4) {
		case 0:
			cons = matchAttr(testDriver + "/numa")
		case 1:
			a := resourceapi.FullyQualifiedName(testDriver + "/numa")
			cons = []resourceapi.DeviceConstraint{{DistinctAttribute: &a}}
		}
		in.claims = append(in.claims, claimOf(fmt.Sprintf("c%d", c), cons, reqs...))
	}
	return in
}

func describe(in instance) string {
	var b strings.Builder
	for _, d := range in.slices[len(in.slices)-1].Spec.Devices {
		fmt.Fprintf(&b, "%s numa=%d special=%t; ", d.Name, *d.Attributes["numa"].IntValue, *d.Attributes["special"].BoolValue)
	}
	for _, c := range in.claims {
		fmt.Fprintf(&b, "\n%s cons=%d:", c.Name, len(c.Spec.Devices.Constraints))
		for _, r := range c.Spec.Devices.Requests {
			if r.Exactly != nil {
				fmt.Fprintf(&b, " %s(%d %v)", r.Name, r.Exactly.Count, r.Exactly.Selectors)
			} else {
				fmt.Fprintf(&b, " %s(firstAvailable)", r.Name)
			}
		}
	}
	return b.String()
}

// TestConcurrentAllocate: one allocator serves Allocate calls for several
// nodes at once (the scheduler's parallel Filter), including the indexes
// built on first use (all slices of an incomplete-looking pool, shared
// device IDs of the allocated state); every call gets its own node's
// devices. Run with -race.
func TestConcurrentAllocate(t *testing.T) {
	in := instance{features: defaultFeatures, classes: []*resourceapi.DeviceClass{gpuClass("gpu")}}
	const nodes = 6
	for n := range nodes {
		node := fmt.Sprintf("node-%d", n)
		for part := range 2 {
			s := nodeSlice(fmt.Sprintf("%s-%d", node, part), 2, devicesN(2, nil)...)
			for i := range s.Spec.Devices {
				s.Spec.Devices[i].Name = fmt.Sprintf("gpu-%d-%d", part, i)
			}
			s.Spec.Pool.Name, s.Spec.NodeName = node, ptr.To(node)
			in.slices = append(in.slices, s)
		}
	}
	// node-0's pool has its second slice published for another node: the
	// pool is complete only counting that slice.
	in.slices[1].Spec.NodeName = ptr.To("elsewhere")
	in.state.AllocatedDevices = sets.New(structured.MakeDeviceID(testDriver, "node-1", "gpu-0-0"))
	in.state.AllocatedSharedDeviceIDs = sets.New(structured.MakeSharedDeviceID(structured.MakeDeviceID(testDriver, "node-2", "gpu-0-0"), ptr.To(types.UID("share"))))
	in.claims = []*resourceapi.ResourceClaim{claimOf("c", nil, req("r", "gpu", 1))}
	a := in.newRef(t, DefaultOptions())
	up := in.newUpstream(t)
	want := map[string]string{}
	for n := range nodes {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", n)}}
		res, err := up.Allocate(context.Background(), node, in.claims)
		if err != nil || len(res) != 1 {
			t.Fatalf("upstream on %s: %v, %v", node.Name, res, err)
		}
		want[node.Name] = res[0].Devices.Results[0].Device
	}
	if want["node-1"] != "gpu-0-1" {
		t.Fatalf("upstream picked %s on node-1, the test expects the allocated gpu-0-0 to be skipped", want["node-1"])
	}
	var wg sync.WaitGroup
	errs := make(chan error, nodes*20)
	for n := range nodes {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", n)}}
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := a.Allocate(context.Background(), node, in.claims)
				switch {
				case err != nil:
					errs <- fmt.Errorf("node %s: %w", node.Name, err)
				case len(res) != 1 || len(res[0].Devices.Results) != 1:
					errs <- fmt.Errorf("node %s: results %+v", node.Name, res)
				case res[0].Devices.Results[0].Pool != node.Name:
					errs <- fmt.Errorf("node %s: got device of pool %s", node.Name, res[0].Devices.Results[0].Pool)
				case res[0].Devices.Results[0].Device != want[node.Name]:
					errs <- fmt.Errorf("node %s: got device %s, want %s", node.Name, res[0].Devices.Results[0].Device, want[node.Name])
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
