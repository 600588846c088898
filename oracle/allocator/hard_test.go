package allocator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The hard instance families of docs/allocator-anchors.md §3.4.

const specialSel = `device.attributes["gpu.example.com"].special`

func devicesN(n int, attr func(i int) map[string]resourceapi.DeviceAttribute) []resourceapi.Device {
	var out []resourceapi.Device
	for i := range n {
		extra := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
		if attr != nil {
			for k, v := range attr(i) {
				extra[resourceapi.QualifiedName(k)] = v
			}
		}
		out = append(out, gpuDevice(i, extra))
	}
	return out
}

func specialFirst(i int) map[string]resourceapi.DeviceAttribute {
	return map[string]resourceapi.DeviceAttribute{"special": boolAttr(i == 0)}
}

func numaHalves(n int) func(int) map[string]resourceapi.DeviceAttribute {
	return func(i int) map[string]resourceapi.DeviceAttribute {
		return map[string]resourceapi.DeviceAttribute{"numa": intAttr(int64(2 * i / n))}
	}
}

// h1: request big (count k, any), then request special (only device 0).
func h1(n, k int) instance {
	return instance{
		features: defaultFeatures,
		classes:  []*resourceapi.DeviceClass{gpuClass("gpu")},
		slices:   []*resourceapi.ResourceSlice{nodeSlice("s", 1, devicesN(n, specialFirst)...)},
		claims:   []*resourceapi.ResourceClaim{claimOf("c", nil, req("big", "gpu", int64(k)), req("special", "gpu", 1, specialSel))},
	}
}

// h2: k single-device claims, then a claim only device 0 satisfies.
func h2(n, k int) instance {
	in := instance{
		features: defaultFeatures,
		classes:  []*resourceapi.DeviceClass{gpuClass("gpu")},
		slices:   []*resourceapi.ResourceSlice{nodeSlice("s", 1, devicesN(n, specialFirst)...)},
	}
	for i := range k {
		in.claims = append(in.claims, claimOf(fmt.Sprintf("c%d", i), nil, req("r", "gpu", 1)))
	}
	in.claims = append(in.claims, claimOf("special", nil, req("r", "gpu", 1, specialSel)))
	return in
}

// h3: request a count k, request b on numa 1, matchAttribute numa.
func h3(n, k int) instance {
	return instance{
		features: defaultFeatures,
		classes:  []*resourceapi.DeviceClass{gpuClass("gpu")},
		slices:   []*resourceapi.ResourceSlice{nodeSlice("s", 1, devicesN(n, numaHalves(n))...)},
		claims: []*resourceapi.ResourceClaim{claimOf("c", matchAttr(testDriver+"/numa"),
			req("a", "gpu", int64(k)), req("b", "gpu", 1, `device.attributes["gpu.example.com"].numa == 1`))},
	}
}

// h3b: k separate 1-device requests plus the numa-1 request last.
func h3b(n, k int) instance {
	var reqs []resourceapi.DeviceRequest
	for i := range k {
		reqs = append(reqs, req(fmt.Sprintf("a%d", i), "gpu", 1))
	}
	reqs = append(reqs, req("b", "gpu", 1, `device.attributes["gpu.example.com"].numa == 1`))
	return instance{
		features: defaultFeatures,
		classes:  []*resourceapi.DeviceClass{gpuClass("gpu")},
		slices:   []*resourceapi.ResourceSlice{nodeSlice("s", 1, devicesN(n, numaHalves(n))...)},
		claims:   []*resourceapi.ResourceClaim{claimOf("c", matchAttr(testDriver+"/numa"), reqs...)},
	}
}

// h4: partitionable counters: device i uses private cpu_i and 10 units of
// memory (device 0: 20); the pool has 10·k memory; request count k.
func h4(n, k int) instance {
	counters := map[string]resourceapi.Counter{"memory": {Value: *resource.NewQuantity(int64(10*k), resource.DecimalSI)}}
	devs := devicesN(n, nil)
	for i := range devs {
		cpu := fmt.Sprintf("cpu%d", i)
		counters[cpu] = resourceapi.Counter{Value: quantity("1")}
		mem := int64(10)
		if i == 0 {
			mem = 20
		}
		devs[i].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu", Counters: map[string]resourceapi.Counter{
			cpu: {Value: quantity("1")}, "memory": {Value: *resource.NewQuantity(mem, resource.DecimalSI)},
		}}}
	}
	cs := nodeSlice("a-counters", 2)
	cs.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu", Counters: counters}}
	return instance{
		features: defaultFeatures,
		classes:  []*resourceapi.DeviceClass{gpuClass("gpu")},
		slices:   []*resourceapi.ResourceSlice{cs, nodeSlice("b-devices", 2, devs...)},
		claims:   []*resourceapi.ResourceClaim{claimOf("c", nil, req("r", "gpu", int64(k)))},
	}
}

// h5: singles single-device claims plus one claim of count big on n devices.
func h5(n, singles, big int) instance {
	in := instance{
		features: defaultFeatures,
		classes:  []*resourceapi.DeviceClass{gpuClass("gpu")},
		slices:   []*resourceapi.ResourceSlice{nodeSlice("s", 1, devicesN(n, nil)...)},
	}
	for i := range singles {
		in.claims = append(in.claims, claimOf(fmt.Sprintf("c%d", i), nil, req("r", "gpu", 1)))
	}
	if big > 0 {
		in.claims = append(in.claims, claimOf("big", nil, req("r", "gpu", int64(big))))
	}
	return in
}

type hardCase struct {
	name string
	in   instance
	sat  bool
}

func hardCases() []hardCase {
	var cs []hardCase
	for _, nk := range [][2]int{{8, 7}, {10, 9}, {16, 8}, {20, 10}, {32, 16}, {64, 31}, {128, 31}} {
		cs = append(cs, hardCase{fmt.Sprintf("H1/n=%d,k=%d", nk[0], nk[1]), h1(nk[0], nk[1]), true})
	}
	for _, nk := range [][2]int{{8, 7}, {10, 8}, {12, 8}, {16, 8}, {32, 5}, {128, 16}} {
		cs = append(cs, hardCase{fmt.Sprintf("H2/n=%d,k=%d", nk[0], nk[1]), h2(nk[0], nk[1]), true})
	}
	for _, nk := range [][2]int{{16, 4}, {24, 6}, {32, 8}, {48, 12}, {64, 16}, {128, 8}, {128, 31}} {
		cs = append(cs, hardCase{fmt.Sprintf("H3/n=%d,k=%d", nk[0], nk[1]), h3(nk[0], nk[1]), true})
	}
	for _, nk := range [][2]int{{16, 4}, {24, 4}, {32, 5}, {64, 5}, {128, 16}} {
		cs = append(cs, hardCase{fmt.Sprintf("H3b/n=%d,k=%d", nk[0], nk[1]), h3b(nk[0], nk[1]), true})
	}
	for _, nk := range [][2]int{{8, 7}, {12, 6}, {16, 8}, {20, 10}, {24, 12}, {28, 14}} {
		cs = append(cs, hardCase{fmt.Sprintf("H4/n=%d,k=%d", nk[0], nk[1]), h4(nk[0], nk[1]), true})
	}
	for _, c := range [][3]int{{8, 4, 5}, {8, 7, 2}, {8, 9, 0}, {12, 6, 7}, {16, 6, 11}, {128, 100, 29}} {
		cs = append(cs, hardCase{fmt.Sprintf("H5/n=%d,%dx1+%d", c[0], c[1], c[2]), h5(c[0], c[1], c[2]), false})
	}
	// H3 without a solution: b wants numa 2, which no device has.
	unsatH3 := h3(32, 8)
	unsatH3.claims[0].Spec.Devices.Requests[1].Exactly.Selectors = cels(`device.attributes["gpu.example.com"].numa == 2`)
	cs = append(cs, hardCase{"H3-unsat/n=32,k=8", unsatH3, false})
	return cs
}

// TestHardFamilies: every family instance is decided correctly, fast, in
// both modes, and every result is structurally sound (distinct devices,
// right counts, constraint values equal).
func TestHardFamilies(t *testing.T) {
	for _, tc := range hardCases() {
		for _, mode := range []Mode{ModeFirstFit, ModePacking} {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				a := tc.in.newRef(t, Options{Mode: mode, StepBudget: 1_000_000})
				start := time.Now()
				res, err := a.Allocate(context.Background(), testNodeObj(), tc.in.claims)
				elapsed := time.Since(start)
				if err != nil {
					t.Fatalf("Allocate: %v", err)
				}
				if got := res != nil; got != tc.sat {
					t.Fatalf("satisfiable = %v, want %v (explain: %s)", got, tc.sat, a.Explain())
				}
				// Generous bound for a shared, noisy machine; the benchmarks
				// measure the real figure.
				if elapsed > 2*time.Second {
					t.Errorf("took %v", elapsed)
				}
				if !tc.sat {
					if a.Explain() == "" {
						t.Error("no explanation for a failed allocation")
					}
					return
				}
				checkBasic(t, tc.in, res)
			})
		}
	}
}

// checkBasic verifies distinct devices across exclusive results, the
// requested counts, and matchAttribute equality on numa.
func checkBasic(t *testing.T, in instance, res []resourceapi.AllocationResult) {
	t.Helper()
	if len(res) != len(in.claims) {
		t.Fatalf("got %d results for %d claims", len(res), len(in.claims))
	}
	seen := map[string]bool{}
	for ci, r := range res {
		want := 0
		for _, rq := range in.claims[ci].Spec.Devices.Requests {
			want += int(rq.Exactly.Count)
		}
		if len(r.Devices.Results) != want {
			t.Errorf("claim %d: %d devices, want %d", ci, len(r.Devices.Results), want)
		}
		numa := map[string]bool{}
		for _, d := range r.Devices.Results {
			if seen[d.Device] {
				t.Errorf("device %s allocated twice", d.Device)
			}
			seen[d.Device] = true
			for _, dev := range in.slices[len(in.slices)-1].Spec.Devices {
				if dev.Name == d.Device {
					numa[fmt.Sprint(*dev.Attributes["numa"].IntValue)] = true
				}
			}
		}
		if len(in.claims[ci].Spec.Devices.Constraints) > 0 && len(numa) != 1 {
			t.Errorf("claim %d: matchAttribute numa violated: values %v", ci, numa)
		}
	}
}

// TestHardFamiliesMatchUpstream: on the sizes upstream decides quickly,
// both allocators agree on satisfiability and, in first-fit mode, on the
// devices chosen.
func TestHardFamiliesMatchUpstream(t *testing.T) {
	cases := []hardCase{
		{"H1/8,7", h1(8, 7), true}, {"H2/8,7", h2(8, 7), true}, {"H3/16,4", h3(16, 4), true},
		{"H3b/16,3", h3b(16, 3), true}, {"H4/8,7", h4(8, 7), true}, {"H5/6,3+4", h5(6, 3, 4), false},
		{"easy/8x1", h5(8, 8, 0), true}, {"easy/count8", h5(8, 0, 8), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := tc.in.newRef(t, DefaultOptions()).Allocate(context.Background(), testNodeObj(), tc.in.claims)
			if err != nil {
				t.Fatalf("reference: %v", err)
			}
			up, err := tc.in.newUpstream(t).Allocate(context.Background(), testNodeObj(), tc.in.claims)
			if err != nil {
				t.Fatalf("upstream: %v", err)
			}
			if (ref != nil) != (up != nil) || (ref != nil) != tc.sat {
				t.Fatalf("satisfiable: reference %v, upstream %v, want %v", ref != nil, up != nil, tc.sat)
			}
			if got, want := devicesOf(ref), devicesOf(up); got != want {
				t.Errorf("first-fit choice differs:\nreference %s\nupstream  %s", got, want)
			}
		})
	}
}

func devicesOf(res []resourceapi.AllocationResult) string {
	var b strings.Builder
	for _, r := range res {
		for _, d := range r.Devices.Results {
			fmt.Fprintf(&b, "%s=%s ", d.Request, d.Device)
		}
		b.WriteString("| ")
	}
	return b.String()
}
