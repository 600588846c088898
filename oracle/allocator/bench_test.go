package allocator

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// Benchmarks put the reference allocator next to upstream on the same
// inputs (NewAllocator once, Allocate per iteration, shared CEL cache).

func benchAllocate(b *testing.B, in instance, upstream bool, nodes []*v1.Node) {
	cache := cel.NewCache(100, cel.Features{})
	var alloc interface {
		Allocate(context.Context, *v1.Node, []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error)
	}
	var err error
	if upstream {
		alloc, err = structured.NewAllocator(context.Background(), in.features, in.state, classList(in.classes), in.slices, cache)
	} else {
		alloc, err = New(context.Background(), in.features, in.state, classList(in.classes), in.slices, cache)
	}
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := alloc.Allocate(ctx, nodes[i%len(nodes)], in.claims); err != nil {
			b.Fatal(err)
		}
	}
}

// easyCase is a benchmark input with the nodes Allocate cycles through.
type easyCase struct {
	name  string
	in    instance
	nodes []*v1.Node
}

// easyCases are the everyday inputs both allocators solve at once.
func easyCases() []easyCase {
	manyNodes := instance{features: defaultFeatures, classes: []*resourceapi.DeviceClass{gpuClass("gpu")},
		claims: []*resourceapi.ResourceClaim{claimOf("c", nil, req("r", "gpu", 1))}}
	var nodes []*v1.Node
	for n := range 500 {
		name := fmt.Sprintf("node-%d", n)
		s := nodeSlice("s-"+name, 1, devicesN(10, nil)...)
		s.Spec.NodeName = ptr.To(name)
		s.Spec.Pool.Name = name
		manyNodes.slices = append(manyNodes.slices, s)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	return []easyCase{
		{"1claim-8gpus", h5(8, 1, 0), []*v1.Node{testNodeObj()}},
		{"8claims-8gpus", h5(8, 8, 0), []*v1.Node{testNodeObj()}},
		{"10dev-500nodes", manyNodes, nodes},
	}
}

func BenchmarkEasy(b *testing.B) {
	for _, impl := range []string{"upstream", "reference"} {
		for _, ec := range easyCases() {
			b.Run(ec.name+"/"+impl, func(b *testing.B) {
				benchAllocate(b, ec.in, impl == "upstream", ec.nodes)
			})
		}
	}
}

// TestEasyCasesAreSolved: both allocators allocate every claim of every
// easy benchmark input on its first and last node, so BenchmarkEasy times
// the success path of both.
func TestEasyCasesAreSolved(t *testing.T) {
	for _, ec := range easyCases() {
		for _, node := range []*v1.Node{ec.nodes[0], ec.nodes[len(ec.nodes)-1]} {
			cache := cel.NewCache(100, cel.Features{})
			up, err := structured.NewAllocator(t.Context(), ec.in.features, ec.in.state, classList(ec.in.classes), ec.in.slices, cache)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := New(t.Context(), ec.in.features, ec.in.state, classList(ec.in.classes), ec.in.slices, cache)
			if err != nil {
				t.Fatal(err)
			}
			for impl, a := range map[string]interface {
				Allocate(context.Context, *v1.Node, []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error)
			}{"upstream": up, "reference": ref} {
				results, err := a.Allocate(t.Context(), node, ec.in.claims)
				if err != nil {
					t.Fatalf("%s on %s, %s: %v", ec.name, node.Name, impl, err)
				}
				if len(results) != len(ec.in.claims) {
					t.Errorf("%s on %s, %s: %d results for %d claims", ec.name, node.Name, impl, len(results), len(ec.in.claims))
				}
			}
		}
	}
}

// BenchmarkHard runs the hard families on the reference allocator only
// (upstream times out on most of them; see allocator-anchors.md §3.4).
func BenchmarkHard(b *testing.B) {
	for _, tc := range hardCases() {
		b.Run(tc.name, func(b *testing.B) {
			benchAllocate(b, tc.in, false, []*v1.Node{testNodeObj()})
		})
	}
}
