package instances

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"drakit.dev/drakit/oracle/allocator"
	"drakit.dev/drakit/oracle/allocator/bench"
	"drakit.dev/drakit/oracle/allocator/check"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func checkInput(s *scenario.Scenario) check.Input {
	return check.Input{Features: s.Features.Structured(), AllocatedState: s.AllocatedState(), Classes: s.DeviceClasses,
		Slices: s.ResourceSlices, Node: s.Node, Claims: s.Claims}
}

// TestFamilies generates every listed size of every family and checks that
// the scenario is valid, survives a YAML round trip (small sizes) and has
// the right Satisfiable answer: the reference allocator (complete search)
// must agree and its results must pass the independent checker.
func TestFamilies(t *testing.T) {
	for _, f := range Families() {
		for _, size := range f.Sizes {
			t.Run(f.Name+"/"+size.String(), func(t *testing.T) {
				s, err := f.New(size.N, size.K)
				if err != nil {
					t.Fatal(err)
				}
				if s.Satisfiable == nil {
					t.Fatal("Satisfiable is not set")
				}
				if errs := s.Validate(); len(errs) > 0 {
					t.Fatalf("generated scenario is invalid: %v", errs.ToAggregate())
				}
				if len(s.ResourceSlices) <= 4 {
					out, err := scenario.Marshal(s)
					if err != nil {
						t.Fatal(err)
					}
					again, err := scenario.Parse(out)
					if err != nil {
						t.Fatalf("parse generated scenario: %v", err)
					}
					if diff := cmp.Diff(s, again, quantityEqual); diff != "" {
						t.Errorf("YAML round trip changed the scenario:\n%s", diff)
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				o, err := bench.Reference(ctx, allocator.DefaultOptions(), s)
				if err != nil {
					t.Fatalf("reference allocator: %v", err)
				}
				if got := o.Results != nil; got != *s.Satisfiable {
					t.Errorf("reference allocator found an allocation: %v, want %v (%s)", got, *s.Satisfiable, o.Explanation)
				}
				if err := check.Check(ctx, checkInput(s), o.Results); err != nil {
					t.Errorf("reference results fail the checker: %v", err)
				}
			})
		}
	}
}

// TestFamiliesUpstream checks Satisfiable against upstream's exhaustive
// search on the sizes it finishes quickly; a timeout skips.
func TestFamiliesUpstream(t *testing.T) {
	small := []struct {
		family string
		n, k   int
	}{
		{"H1", 8, 7}, {"H1", 4, 4}, {"H2", 6, 5}, {"H2", 4, 4}, {"H3", 8, 3}, {"H3", 8, 4}, {"H3b", 8, 3}, {"H3b", 8, 4},
		{"H4", 8, 7}, {"H4", 6, 6}, {"H5", 6, 3}, {"H5c", 5, 0}, {"easy", 8, 1}, {"easy", 4, 5}, {"many-nodes", 10, 20},
		{"frag-mig", 2, 2}, {"frag-mig", 2, 9}, {"frag-numa", 2, 0},
	}
	for _, tc := range small {
		t.Run(fmt.Sprintf("%s/n=%d,k=%d", tc.family, tc.n, tc.k), func(t *testing.T) {
			s, err := Generate(tc.family, tc.n, tc.k)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			o, err := bench.Upstream(ctx, s)
			if errors.Is(err, context.DeadlineExceeded) {
				t.Skipf("upstream timed out after %v", o.Duration)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Results != nil; got != *s.Satisfiable {
				t.Errorf("upstream found an allocation: %v, want %v", got, *s.Satisfiable)
			}
		})
	}
}

// TestFragmentation plays the OneByOne families pod by pod: upstream's first
// fit fails the last pod (the anchor of allocator-anchors.md §3.5), the
// reference allocator in packing mode places every pod.
func TestFragmentation(t *testing.T) {
	for _, f := range Families() {
		if !f.OneByOne {
			continue
		}
		for _, size := range f.Sizes {
			t.Run(f.Name+"/"+size.String(), func(t *testing.T) {
				s, err := f.New(size.N, size.K)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				up, _, err := s.OneByOne(ctx, bench.UpstreamFunc())
				if err != nil {
					t.Fatal(err)
				}
				if last := up[len(up)-1]; last != nil {
					t.Errorf("upstream placed the last pod %s, want first fit to fail it", s.Claims[len(up)-1].Name)
				}
				packing := allocator.Options{Mode: allocator.ModePacking}
				ref, final, err := s.OneByOne(ctx, bench.ReferenceFunc(packing))
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range ref {
					if r == nil {
						t.Errorf("packing mode did not place pod %s", s.Claims[i].Name)
					}
				}
				if got, want := len(final.AllocatedClaims), countPlaced(ref); got != want {
					t.Errorf("final state holds %d claims, want %d", got, want)
				}
			})
		}
	}
}

func countPlaced(rs []*resourceapi.AllocationResult) int {
	n := 0
	for _, r := range rs {
		if r != nil {
			n++
		}
	}
	return n
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		family string
		n, k   int
		want   string
	}{
		{"H9", 8, 1, `family "H9": unknown`},
		{"H1", 1, 1, "n must be in [2, 128]"},
		{"H1", 64, 32, "k must be in [1, 31]"},
		{"H3", 300, 4, "n must be in [2, 128]"},
		{"H5", 128, 10, "k must be in [97, 128]"},
		{"H5c", 8, 1, "k must be in [0, 0]"},
		{"frag-mig", 2, 17, "k must be in [1, 16]"},
		{"many-nodes", 10, 0, "k must be in [1, 100000]"},
	}
	for _, tc := range tests {
		_, err := Generate(tc.family, tc.n, tc.k)
		if !errors.Is(err, ErrBadParameter) || !contains(err.Error(), tc.want) {
			t.Errorf("Generate(%s, %d, %d) error = %v, want ErrBadParameter containing %q", tc.family, tc.n, tc.k, err, tc.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestDeterministic(t *testing.T) {
	for _, f := range Families() {
		size := f.Sizes[0]
		a, err := f.New(size.N, size.K)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := f.New(size.N, size.K)
		ya, _ := scenario.Marshal(a)
		yb, _ := scenario.Marshal(b)
		if string(ya) != string(yb) {
			t.Errorf("%s %s: two generations differ", f.Name, size)
		}
	}
}

func TestBasicDeviceModel(t *testing.T) {
	d := basicDevice(3, 1)
	if len(d.Attributes) != 14 || len(d.Capacity) != 2 {
		t.Errorf("basic device has %d attributes and %d capacities, want 14 and 2", len(d.Attributes), len(d.Capacity))
	}
	if *d.Attributes["numa"].IntValue != 1 || *d.Attributes["special"].BoolValue {
		t.Errorf("device 3 on numa 1: numa=%d special=%v", *d.Attributes["numa"].IntValue, *d.Attributes["special"].BoolValue)
	}
}
