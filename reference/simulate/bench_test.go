package simulate

import (
	"testing"

	"drakit.dev/drakit/reference/driver"
)

// Publishing benchmarks (scripts/bench-publish.sh): the pools the driver
// builds, published through the resourceslice controller (one per node,
// as Simulate runs them) into a fake clientset that serves ResourceSlices
// as the API server does (newSliceServer), until the watch sees every slice.

// migNode64 is one node with 64 A100-SXM4-40GB in dynamic MIG mode: each GPU
// published as the full GPU plus all 25 placements of its 7 GI profiles.
func migNode64(b testing.TB) *driver.Inventory {
	b.Helper()
	p, err := ReplicateProfileGPUs(loadProfile(b, a100DynamicMIG), 64)
	if err != nil {
		b.Fatal(err)
	}
	inv, err := ProfileInventory(p)
	if err != nil {
		b.Fatal(err)
	}
	return inv
}

func reportPool(b *testing.B, slices, devices int) {
	b.ReportMetric(float64(slices), "slices/op")
	b.ReportMetric(float64(devices), "devices/op")
}

// BenchmarkBuildResourcesMIG64 is building the 64-GPU MIG node's pool
// alone (driver.NodeResources): 64 counter sets and 64·26 devices
// consuming them.
func BenchmarkBuildResourcesMIG64(b *testing.B) {
	inv := migNode64(b)
	var slices, devices int
	for b.Loop() {
		slices, devices = poolSize(nodePool(b, inv))
	}
	if devices != 64*26 {
		b.Fatalf("%d devices, want %d", devices, 64*26)
	}
	reportPool(b, slices, devices)
}

// BenchmarkPublish times building the nodes' pools plus publishing them
// until the API server (here the fake) holds every slice; starting the
// publishers (their informers sync in about a second) is not timed.
func BenchmarkPublish(b *testing.B) {
	for _, bc := range []struct {
		name     string
		template func(testing.TB) *driver.Inventory
		nodes    int
	}{
		{"mig-64gpus/nodes=1", migNode64, 1},
		{"dgx-h100/nodes=1000", builtinInventory("dgx-h100"), 1000},
		{"mixed-mig/nodes=1000", builtinInventory("mixed-mig"), 1000},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := b.Context()
			template := bc.template(b)
			cfg := simulationConfig(bc.nodes)
			var slices, devices int
			for range b.N {
				b.StopTimer()
				client := newSliceServer()
				b.StartTimer()
				nodes, err := buildNodes(ctx, template, cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				sim, err := startSimulation(ctx, shared(client), cfg.DriverName, nodes)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := sim.publish(ctx, func(int, int) {}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				sim.stop()
				s, d := poolSize(nodes[0].pool)
				slices, devices = s*len(nodes), d*len(nodes)
				if st := sim.stats(); st.NumCreates != int64(slices) {
					b.Fatalf("%d creates for %d slices", st.NumCreates, slices)
				}
				b.StartTimer()
			}
			reportPool(b, slices, devices)
		})
	}
}

func builtinInventory(name string) func(testing.TB) *driver.Inventory {
	return func(b testing.TB) *driver.Inventory {
		inv, err := ProfileInventory(builtinProfile(b, name))
		if err != nil {
			b.Fatal(err)
		}
		return inv
	}
}

// TestPublishBenchmarkInputs pins what the benchmarks publish per node, so
// their slices/op and devices/op mean what the README says: the 64-GPU MIG
// node is 64 counter sets (8 slices) plus 64·26 devices (26 slices of 64),
// a dgx-h100 node 8 whole GPUs in one slice.
func TestPublishBenchmarkInputs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                    string
		inv                     *driver.Inventory
		wantSlices, wantDevices int
	}{
		{"mig-64gpus", migNode64(t), 34, 64 * 26},
		{"dgx-h100", builtinInventory("dgx-h100")(t), 1, 8},
	} {
		if slices, devices := poolSize(nodePool(t, tc.inv)); slices != tc.wantSlices || devices != tc.wantDevices {
			t.Errorf("%s: %d slices with %d devices, want %d with %d", tc.name, slices, devices, tc.wantSlices, tc.wantDevices)
		}
	}
}
