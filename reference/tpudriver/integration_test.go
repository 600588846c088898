package tpudriver

import (
	"fmt"
	"os"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestIntegrationSubslicePoolValidates creates the sub-slice pools the
// controller plans for a 4x4x4 slice of 16 hosts and a 2x2x64 slice of 64
// hosts (two counter sets, three device slices) through a real API server,
// as a dry run: the API's validation of perDeviceNodeSelection, node
// selectors, shared counters and consumesCounters accepts every slice.
// It needs a cluster: DRAKIT_KUBECONFIG (drakit env status -o env).
func TestIntegrationSubslicePoolValidates(t *testing.T) {
	kubeconfig := os.Getenv("DRAKIT_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("no cluster: set DRAKIT_KUBECONFIG to the admin kubeconfig of a running cluster (drakit env up, then eval \"$(drakit env status -o env)\")")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topo            string
		slices, devices int
	}{{"4x4x4", 2, 21}, {"2x2x64", 4, 129}} {
		g := geometry(t, tc.topo, "2x2x1")
		info := sliceInfo{name: "integration", generation: "v5p", geometry: g, nodes: map[int]string{}}
		for w := range g.Hosts() {
			info.nodes[w] = fmt.Sprintf("drakit-integration-node-%d", w)
		}
		pool, err := subslicePool(DefaultDriverName, info, defaultShapes(t))
		if err != nil {
			t.Fatal(err)
		}
		devices := 0
		for _, s := range pool.Slices {
			devices += len(s.Devices)
		}
		if len(pool.Slices) != tc.slices || devices != tc.devices {
			t.Errorf("%s: %d slices with %d devices, want %d with %d", tc.topo, len(pool.Slices), devices, tc.slices, tc.devices)
		}
		for i, s := range pool.Slices {
			obj := &resourceapi.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "drakit-integration-"},
				Spec: resourceapi.ResourceSliceSpec{Driver: DefaultDriverName,
					Pool:                   resourceapi.ResourcePool{Name: SubslicePool("integration"), ResourceSliceCount: int64(len(pool.Slices))},
					PerDeviceNodeSelection: s.PerDeviceNodeSelection, Devices: s.Devices, SharedCounters: s.SharedCounters},
			}
			if _, err := client.ResourceV1().ResourceSlices().Create(t.Context(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("%s: slice %d of the pool: %v", tc.topo, i, err)
			}
		}
	}
}
