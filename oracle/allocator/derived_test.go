package allocator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"drakit.dev/drakit/oracle/allocator/check"
)

var derivedFeatures = structured.Features{
	AdminAccess: true, PrioritizedList: true, PartitionableDevices: true, DeviceTaints: true,
	ConsumableCapacity: true, DerivedAttributes: true,
}

func withDerived(r resourceapi.DeviceRequest, nameExpr ...string) resourceapi.DeviceRequest {
	for i := 0; i+1 < len(nameExpr); i += 2 {
		r.Exactly.DerivedAttributes = append(r.Exactly.DerivedAttributes, resourceapi.DeviceDerivedAttribute{
			Name: resourceapi.FullyQualifiedName(nameExpr[i]), Expression: nameExpr[i+1],
		})
	}
	return r
}

func distinctAttr(attr string, requests ...string) []resourceapi.DeviceConstraint {
	a := resourceapi.FullyQualifiedName(attr)
	return []resourceapi.DeviceConstraint{{Requests: requests, DistinctAttribute: &a}}
}

// attrOf is the CEL expression reading attribute name of testDriver.
func attrOf(name string) string {
	return fmt.Sprintf(`device.attributes["%s"]["%s"]`, testDriver, name)
}

// derivedSlice has n devices; device i has gpuNuma = i/2 for even i
// ("GPUs") and nicNuma = i/2 for odd i ("NICs").
func derivedSlice(n int) *resourceapi.ResourceSlice {
	var devs []resourceapi.Device
	for i := range n {
		kind, attr := "gpu", "gpuNuma"
		if i%2 == 1 {
			kind, attr = "nic", "nicNuma"
		}
		devs = append(devs, gpuDevice(i, map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"kind": strAttr(kind), resourceapi.QualifiedName(attr): intAttr(int64(i / 2)),
		}))
	}
	return nodeSlice("slice-1", 1, devs...)
}

// TestDerivedAttributes runs every case through upstream, the reference
// allocator's lazy phase and its complete search (first fit: results and
// errors must be upstream's, text included) and packing mode (results
// must pass the checker); every result goes through check.Check.
func TestDerivedAttributes(t *testing.T) {
	gpuNic := func(gpuExpr, nicExpr string, constraints []resourceapi.DeviceConstraint) *resourceapi.ResourceClaim {
		return claimOf("c0", constraints,
			withDerived(req("gpu", "gpu", 1, `device.attributes["`+testDriver+`"].kind == "gpu"`), "d.example.com/numa", gpuExpr),
			withDerived(req("nic", "gpu", 1, `device.attributes["`+testDriver+`"].kind == "nic"`), "d.example.com/numa", nicExpr),
		)
	}
	tests := []struct {
		name     string
		features structured.Features
		listCEL  bool // CEL cache with list-type attributes
		slices   []*resourceapi.ResourceSlice
		claims   []*resourceapi.ResourceClaim
		// wantFit: an allocation is expected; wantErr: the error text
		// contains this (compared exactly with upstream's besides).
		wantFit bool
		wantErr string
		// packingMayErr: packing mode tries other devices first and may
		// reach a device whose derivation fails.
		packingMayErr bool
	}{{
		name:   "matching derived names across differently named attributes",
		slices: []*resourceapi.ResourceSlice{derivedSlice(8)},
		claims: []*resourceapi.ResourceClaim{gpuNic(attrOf("gpuNuma"), attrOf("nicNuma"), matchAttr("d.example.com/numa"))},
		// gpu-0 and gpu-1 share numa 0.
		wantFit: true,
	}, {
		name:   "derived value forces backtracking",
		slices: []*resourceapi.ResourceSlice{derivedSlice(8)},
		claims: []*resourceapi.ResourceClaim{gpuNic(attrOf("gpuNuma"), attrOf("nicNuma")+" + 3", matchAttr("d.example.com/numa"))},
		// nic numa+3 == gpu numa only for gpu-6 (numa 3) and gpu-1 (numa 0).
		wantFit: true,
	}, {
		name:   "no pair has matching derived values",
		slices: []*resourceapi.ResourceSlice{derivedSlice(8)},
		claims: []*resourceapi.ResourceClaim{gpuNic(attrOf("gpuNuma"), attrOf("nicNuma")+" + 10", matchAttr("d.example.com/numa"))},
	}, {
		name:   "derived name shadows the device attribute for its request only",
		slices: []*resourceapi.ResourceSlice{derivedSlice(8)},
		claims: []*resourceapi.ResourceClaim{claimOf("c0", matchAttr(testDriver+"/index"),
			withDerived(req("a", "gpu", 1), testDriver+"/index", "5"),
			req("b", "gpu", 1),
		)},
		// a takes gpu-0 (derived 5), b must take the device with index 5.
		wantFit: true,
	}, {
		name:   "distinct derived values",
		slices: []*resourceapi.ResourceSlice{derivedSlice(8)},
		claims: []*resourceapi.ResourceClaim{claimOf("c0", distinctAttr("d.example.com/half"),
			withDerived(req("a", "gpu", 4), "d.example.com/half", attrOf("index")+" / 2"),
		)},
		wantFit: true,
	}, {
		name:   "too few distinct derived values",
		slices: []*resourceapi.ResourceSlice{derivedSlice(8)},
		claims: []*resourceapi.ResourceClaim{claimOf("c0", distinctAttr("d.example.com/q"),
			withDerived(req("a", "gpu", 5), "d.example.com/q", attrOf("index")+" / 2"),
		)},
	}, {
		name:     "list-valued derived attribute intersects",
		features: func() structured.Features { f := derivedFeatures; f.ListTypeAttributes = true; return f }(),
		listCEL:  true,
		slices:   []*resourceapi.ResourceSlice{derivedSlice(8)},
		claims: []*resourceapi.ResourceClaim{claimOf("c0", matchAttr("d.example.com/near"),
			withDerived(req("a", "gpu", 3), "d.example.com/near", "["+attrOf("index")+" / 3, "+attrOf("index")+" / 3 + 1]"),
		)},
		wantFit: true,
	}, {
		name:   "derived values of different types never match",
		slices: []*resourceapi.ResourceSlice{derivedSlice(8)},
		claims: []*resourceapi.ResourceClaim{claimOf("c0", matchAttr("d.example.com/t"),
			withDerived(req("a", "gpu", 2), "d.example.com/t", attrOf("index")+` == 0 ? dyn("zero") : dyn(1)`),
		)},
		// gpu-0 gives a string, the others int 1: gpu-1 and gpu-2 match.
		wantFit: true,
	}, {
		name:   "firstAvailable alternative with its own derived attribute",
		slices: []*resourceapi.ResourceSlice{derivedSlice(8)},
		claims: []*resourceapi.ResourceClaim{func() *resourceapi.ResourceClaim {
			c := claimOf("c0", matchAttr("d.example.com/m"),
				resourceapi.DeviceRequest{Name: "a", FirstAvailable: []resourceapi.DeviceSubRequest{
					{Name: "never", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
						DerivedAttributes: []resourceapi.DeviceDerivedAttribute{{Name: "d.example.com/m", Expression: `"x"`}}},
					{Name: "index", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
						DerivedAttributes: []resourceapi.DeviceDerivedAttribute{{Name: "d.example.com/m", Expression: attrOf("index")}}},
				}},
				withDerived(req("b", "gpu", 1), "d.example.com/m", attrOf("index")+" - 3"),
			)
			return c
		}()},
		wantFit: true,
	}, {
		name:     "feature disabled",
		features: defaultFeatures,
		slices:   []*resourceapi.ResourceSlice{derivedSlice(4)},
		claims:   []*resourceapi.ResourceClaim{gpuNic(attrOf("gpuNuma"), attrOf("nicNuma"), matchAttr("d.example.com/numa"))},
		wantErr:  "claim default/c0, request gpu: cannot handle request with derived attributes, the feature is disabled",
	}, {
		name:    "compile error",
		slices:  []*resourceapi.ResourceSlice{derivedSlice(4)},
		claims:  []*resourceapi.ResourceClaim{gpuNic(`device.attributes["`+testDriver+`"]`, attrOf("nicNuma"), matchAttr("d.example.com/numa"))},
		wantErr: "compile derived attribute d.example.com/numa failed: ",
	}, {
		name:    "runtime error on a device the search reaches",
		slices:  []*resourceapi.ResourceSlice{derivedSlice(4)},
		claims:  []*resourceapi.ResourceClaim{gpuNic(attrOf("nicNuma"), attrOf("nicNuma"), matchAttr("d.example.com/numa"))},
		wantErr: "evaluate derived attribute d.example.com/numa on device gpu.example.com/node-1/gpu-0 failed: no such key: nicNuma",
	}, {
		name:   "runtime error on a device the search never reaches",
		slices: []*resourceapi.ResourceSlice{derivedSlice(8)},
		// gpu-0 and gpu-1 match; gpu-2 and later fail to evaluate.
		claims: []*resourceapi.ResourceClaim{claimOf("c0", matchAttr("d.example.com/v"),
			withDerived(req("a", "gpu", 2), "d.example.com/v", attrOf("index")+` < 2 ? 0 : device.attributes["`+testDriver+`"]["missing"]`),
		)},
		wantFit:       true,
		packingMayErr: true,
	}, {
		name:   "runtime error on a device the selectors exclude",
		slices: []*resourceapi.ResourceSlice{derivedSlice(8)},
		claims: []*resourceapi.ResourceClaim{claimOf("c0", matchAttr("d.example.com/numa"),
			withDerived(req("a", "gpu", 2, `device.attributes["`+testDriver+`"].kind == "gpu"`), "d.example.com/numa", attrOf("gpuNuma")+" / 2"),
		)},
		wantFit: true,
	}, {
		name:   "runtime error behind an earlier constraint that rejects the device",
		slices: []*resourceapi.ResourceSlice{derivedSlice(8)},
		claims: []*resourceapi.ResourceClaim{claimOf("c0",
			append(matchAttr(testDriver+"/kind"), matchAttr("d.example.com/numa")...),
			withDerived(req("a", "gpu", 2), "d.example.com/numa", attrOf("gpuNuma")+" / 2"),
		)},
		// a takes gpu-0 (a GPU); every NIC fails the kind match before
		// its gpuNuma is looked up; gpu-2 matches both.
		wantFit: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			features := tc.features
			if features == (structured.Features{}) {
				features = derivedFeatures
			}
			classes := []*resourceapi.DeviceClass{gpuClass("gpu")}
			newCache := func() *cel.Cache { return cel.NewCache(10, cel.Features{EnableListTypeAttributes: tc.listCEL}) }
			up, err := structured.NewAllocator(ctx, features, structured.AllocatedState{}, classList(classes), tc.slices, newCache())
			if err != nil {
				t.Fatalf("create upstream allocator: %v", err)
			}
			upRes, upErr := up.Allocate(ctx, testNodeObj(), tc.claims)
			if (upRes != nil) != tc.wantFit {
				t.Fatalf("upstream: fit = %t (err %v), the test expects %t", upRes != nil, upErr, tc.wantFit)
			}
			if (upErr != nil) != (tc.wantErr != "") || upErr != nil && !strings.Contains(upErr.Error(), tc.wantErr) {
				t.Fatalf("upstream error = %v, the test expects %q", upErr, tc.wantErr)
			}
			in := check.Input{Features: features, Classes: classes, Slices: tc.slices, Node: testNodeObj(), Claims: tc.claims}
			for _, v := range []struct {
				name         string
				mode         Mode
				completeOnly bool
			}{{"lazy", ModeFirstFit, false}, {"complete", ModeFirstFit, true}, {"packing", ModePacking, false}} {
				t.Run(v.name, func(t *testing.T) {
					a, err := NewWithOptions(ctx, Options{Mode: v.mode}, features, structured.AllocatedState{}, classList(classes), tc.slices, newCache())
					if err != nil {
						t.Fatalf("create reference allocator: %v", err)
					}
					a.completeOnly = v.completeOnly
					res, err := a.Allocate(ctx, testNodeObj(), tc.claims)
					if v.mode == ModePacking {
						if tc.wantErr != "" {
							if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
								t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
							}
							return
						}
						if err != nil && !(tc.packingMayErr && strings.Contains(err.Error(), "evaluate derived attribute")) {
							t.Fatalf("Allocate: %v", err)
						}
						if err == nil && (res != nil) != tc.wantFit {
							t.Fatalf("fit = %t, want %t", res != nil, tc.wantFit)
						}
					} else {
						if fmt.Sprint(err) != fmt.Sprint(upErr) {
							t.Fatalf("error = %v, upstream's = %v", err, upErr)
						}
						if diff := cmp.Diff(upRes, res, cmpopts.EquateEmpty()); diff != "" {
							t.Fatalf("result differs from upstream's (-upstream +reference):\n%s", diff)
						}
					}
					if res != nil {
						if err := check.Check(ctx, in, res); err != nil {
							t.Fatalf("check: %v", err)
						}
					}
				})
			}
		})
	}
}

// TestDerivedAttributesBound: the complete search's bounds see derived
// values per (request, device), so infeasibility is proved without
// enumerating combinations (upstream's search is exponential here).
func TestDerivedAttributesBound(t *testing.T) {
	const n = 64
	tests := []struct {
		name    string
		claim   *resourceapi.ResourceClaim
		wantFit bool
	}{{
		// 9 devices with distinct values of index % 8: only 8 exist.
		name: "distinct needs more values than exist",
		claim: claimOf("c0", distinctAttr("d.example.com/slot"),
			withDerived(req("a", "gpu", 9), "d.example.com/slot", attrOf("index")+" % 8")),
	}, {
		// Two requests with differently derived values of one name:
		// a's value is index % 8, b's is 100 + index: 9 distinct values
		// in all, b offers plenty.
		name: "distinct over two derivations",
		claim: claimOf("c0", distinctAttr("d.example.com/slot"),
			withDerived(req("a", "gpu", 8), "d.example.com/slot", attrOf("index")+" % 8"),
			withDerived(req("b", "gpu", 1), "d.example.com/slot", "100 + "+attrOf("index"))),
		wantFit: true,
	}, {
		// 5 devices in one group of index / 4: groups have 4.
		name: "match group too small",
		claim: claimOf("c0", matchAttr("d.example.com/grp"),
			withDerived(req("a", "gpu", 5), "d.example.com/grp", attrOf("index")+" / 4")),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var devs []resourceapi.Device
			for i := range n {
				devs = append(devs, gpuDevice(i, nil))
			}
			in := instance{
				features: derivedFeatures,
				classes:  []*resourceapi.DeviceClass{gpuClass("gpu")},
				slices:   []*resourceapi.ResourceSlice{nodeSlice("slice-1", 1, devs...)},
				claims:   []*resourceapi.ResourceClaim{tc.claim},
			}
			for _, mode := range []Mode{ModeFirstFit, ModePacking} {
				a := in.newRef(t, Options{Mode: mode, StepBudget: 2000})
				res, err := a.Allocate(context.Background(), testNodeObj(), in.claims)
				if errors.Is(err, ErrStepBudget) {
					t.Fatalf("%s: not decided within the step budget", mode)
				}
				if err != nil {
					t.Fatalf("%s: Allocate: %v", mode, err)
				}
				if (res != nil) != tc.wantFit {
					t.Fatalf("%s: fit = %t, want %t", mode, res != nil, tc.wantFit)
				}
				if res != nil {
					err := check.Check(context.Background(), check.Input{Features: in.features, Classes: in.classes, Slices: in.slices, Node: testNodeObj(), Claims: in.claims}, res)
					if err != nil {
						t.Fatalf("%s: check: %v", mode, err)
					}
				}
			}
		})
	}
}
