package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/reference/driver"
)

// shared serves every publisher from one client.
func shared(client kubernetes.Interface) func() (kubernetes.Interface, error) {
	return func() (kubernetes.Interface, error) { return client, nil }
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if cfg := DefaultConfig(); cfg.Validate() != nil {
		t.Fatalf("defaults are invalid: %v", cfg.Validate())
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*Config)
		wantErr string // empty: valid
	}{
		{"one node", func(c *Config) { c.Nodes = 1 }, ""},
		{"most nodes", func(c *Config) { c.Nodes = MaxNodes }, ""},
		{"64 GPUs per node from a file", func(c *Config) { c.GPUsPerNode, c.Profile = 64, "testdata/x.yaml" }, ""},
		{"bad driver", func(c *Config) { c.DriverName = "GPU_x" }, "DriverName"},
		{"long driver", func(c *Config) { c.DriverName = strings.Repeat("a", 61) + ".io" }, "DriverName"},
		{"no profile", func(c *Config) { c.Profile = "" }, "Profile is required"},
		{"negative GPUs", func(c *Config) { c.GPUsPerNode = -1 }, "GPUsPerNode -1"},
		{"no nodes", func(c *Config) { c.Nodes = 0 }, "Nodes 0"},
		{"too many nodes", func(c *Config) { c.Nodes = MaxNodes + 1 }, "Nodes 10001"},
		{"prefix with capitals", func(c *Config) { c.NodePrefix = "Sim-" }, "NodePrefix"},
		{"prefix too long", func(c *Config) { c.NodePrefix = strings.Repeat("a.", 126) }, "NodePrefix"},
		{"no timeout", func(c *Config) { c.Timeout = 0 }, "Timeout"},
		{"no QPS", func(c *Config) { c.QPS = 0 }, "QPS 0"},
		{"no burst", func(c *Config) { c.Burst = 0 }, "Burst 0"},
		{"request timeout", func(c *Config) { c.RequestTimeout = time.Second }, ""},
		{"negative request timeout", func(c *Config) { c.RequestTimeout = -time.Second }, "RequestTimeout -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mutate(&cfg)
			err := cfg.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("valid config rejected: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalidConfig)):
				t.Errorf("error %v, want an ErrInvalidConfig containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestSimulatedNodeNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		nodes       int
		first, last string
	}{
		{1, "sim-0", "sim-0"},
		{10, "sim-0", "sim-9"},
		{11, "sim-00", "sim-10"},
		{1000, "sim-000", "sim-999"},
	} {
		cfg := Config{NodePrefix: "sim-", Nodes: tc.nodes}
		if first, last := cfg.nodeName(0), cfg.nodeName(tc.nodes-1); first != tc.first || last != tc.last {
			t.Errorf("%d nodes: first and last names %s, %s; want %s, %s", tc.nodes, first, last, tc.first, tc.last)
		}
	}
}

// simulationConfig is a small simulation of the mixed-mig profile.
func simulationConfig(nodes int) Config {
	cfg := DefaultConfig()
	cfg.Profile, cfg.Nodes, cfg.NodePrefix = "mixed-mig", nodes, "sim-"
	return cfg
}

// buildTestNodes builds cfg's template inventory (one node's hardware) and
// its simulated nodes.
func buildTestNodes(t *testing.T, cfg Config) (template *driver.Inventory, nodes []simulatedNode) {
	t.Helper()
	template, err := templateInventory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err = buildNodes(t.Context(), template, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return template, nodes
}

// startTestSimulation builds cfg's simulated nodes and starts their
// publishers, all on client: the test gives it the objects and reactors it
// needs beforehand. The publishers stop when the test ends.
func startTestSimulation(t *testing.T, ctx context.Context, cfg Config, client *fake.Clientset) (*simulation, []simulatedNode) {
	t.Helper()
	_, nodes := buildTestNodes(t, cfg)
	sim, err := startSimulation(ctx, shared(client), cfg.DriverName, nodes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.stop)
	return sim, nodes
}

func TestBuildSimulatedNodes(t *testing.T) {
	t.Parallel()
	cfg := simulationConfig(12)
	template, nodes := buildTestNodes(t, cfg)
	// What the driver publishes on one node with this hardware.
	single := nodePool(t, template)
	wantSlices, wantDevices := poolSize(single)
	if wantDevices != 2*26+4+5+2 || wantSlices != 2 {
		t.Fatalf("mixed-mig builds %d slices with %d devices, want 2 with 63", wantSlices, wantDevices)
	}
	var names []string
	uuids := map[string]string{} // GPU or MIG device UUID → node
	for _, n := range nodes {
		names = append(names, n.name)
		if s, d := poolSize(n.pool); s != wantSlices || d != wantDevices {
			t.Errorf("node %s: %d slices with %d devices, want %d with %d", n.name, s, d, wantSlices, wantDevices)
		}
		wantSelector := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n.name}}}}}}
		if diff := cmp.Diff(wantSelector, n.pool.NodeSelector); diff != "" {
			t.Errorf("node %s selector (-want +got):\n%s", n.name, diff)
		}
		for i, s := range n.pool.Slices {
			want := single.Slices[i]
			if len(s.Devices) != len(want.Devices) || len(s.SharedCounters) != len(want.SharedCounters) {
				t.Errorf("node %s slice %d: %d devices, %d counter sets; want %d, %d", n.name, i, len(s.Devices), len(s.SharedCounters), len(want.Devices), len(want.SharedCounters))
			}
			for _, d := range s.Devices {
				if u := d.Attributes["uuid"].StringValue; u != nil {
					if other, dup := uuids[*u]; dup {
						t.Errorf("device %s of node %s has UUID %s of node %s", d.Name, n.name, *u, other)
					}
					uuids[*u] = n.name
				}
			}
		}
	}
	if diff := cmp.Diff([]string{"sim-00", "sim-01", "sim-02", "sim-03", "sim-04", "sim-05", "sim-06", "sim-07", "sim-08", "sim-09", "sim-10", "sim-11"}, names); diff != "" {
		t.Errorf("node names (-want +got):\n%s", diff)
	}
	// GPU UUIDs are what the emulator derives with the node name as seed.
	inv, err := nodeDiscoverer{template: template, node: "sim-03"}.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := gpu.DeriveUUID("sim-03", platform.Address{Bus: 0x47}); inv.GPUs[2].UUID != want {
		t.Errorf("GPU 2 of sim-03 has UUID %s, want %s", inv.GPUs[2].UUID, want)
	}
	if got, want := inv.GPUs[0].MIG.Instances[0].UUID, gpu.DeriveMIGUUID(inv.GPUs[0].UUID, 1, 0); got != want {
		t.Errorf("first MIG device of sim-03 has UUID %s, want %s", got, want)
	}
	if template.GPUs[2].UUID == inv.GPUs[2].UUID || template.GPUs[0].MIG.Instances[0].UUID == inv.GPUs[0].MIG.Instances[0].UUID {
		t.Error("nodeDiscoverer changed the template's UUIDs")
	}
}

// listSlices returns the driver's slices by pool.
func listSlices(t *testing.T, client *fake.Clientset) map[string][]resourceapi.ResourceSlice {
	t.Helper()
	list, err := client.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]resourceapi.ResourceSlice{}
	for _, s := range list.Items {
		out[s.Spec.Pool.Name] = append(out[s.Spec.Pool.Name], s)
	}
	return out
}

func noProgress(int, int) {}

func TestSimulationPublishesAndDeletes(t *testing.T) {
	t.Parallel()
	_, ctx := ktesting.NewTestContext(t)
	cfg := simulationConfig(5)
	// A real node's slice of the same driver must survive.
	real := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "real-slice"}, Spec: resourceapi.ResourceSliceSpec{
		Driver: cfg.DriverName, NodeName: ptr.To("node-1"), Pool: resourceapi.ResourcePool{Name: "node-1", ResourceSliceCount: 1}}}
	client := newSliceServer(real)
	sim, nodes := startTestSimulation(t, ctx, cfg, client)
	if err := sim.publish(ctx, noProgress); err != nil {
		t.Fatal(err)
	}
	got := listSlices(t, client)
	for _, n := range nodes {
		pool := got[n.name]
		if len(pool) != 2 {
			t.Errorf("pool %s has %d slices, want 2", n.name, len(pool))
		}
		devices := 0
		for _, s := range pool {
			devices += len(s.Spec.Devices)
			if s.Spec.NodeName != nil || s.Spec.Driver != cfg.DriverName || len(s.OwnerReferences) != 0 {
				t.Errorf("slice %s: nodeName %v, driver %s, owners %v; want no node name, %s, no owner", s.Name, s.Spec.NodeName, s.Spec.Driver, s.OwnerReferences, cfg.DriverName)
			}
			if diff := cmp.Diff(n.pool.NodeSelector, s.Spec.NodeSelector); diff != "" {
				t.Errorf("slice %s node selector (-want +got):\n%s", s.Name, diff)
			}
		}
		if devices != 63 {
			t.Errorf("pool %s has %d devices, want 63", n.name, devices)
		}
	}

	if err := sim.unpublish(ctx, noProgress); err != nil {
		t.Fatal(err)
	}
	got = listSlices(t, client)
	if diff := cmp.Diff([]string{"node-1"}, slices.Sorted(mapKeysOf(got))); diff != "" {
		t.Errorf("pools after unpublish (-want +got):\n%s", diff)
	}
	// A publisher counts a call once it returned: stopped, all are counted.
	sim.stop()
	if st := sim.stats(); st.NumCreates != 10 || st.NumUpdates != 0 || st.NumDeletes != 10 {
		t.Errorf("publisher stats %+v, want 10 creates and 10 deletes", st)
	}
}

func mapKeysOf[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestSimulationTakesKeptSlicesOver publishes, stops without deleting (as
// --keep does), then publishes a changed pool for the same nodes: the new
// publishers update the kept slices, and publish waits for the new content.
func TestSimulationTakesKeptSlicesOver(t *testing.T) {
	t.Parallel()
	_, ctx := ktesting.NewTestContext(t)
	cfg := simulationConfig(3)
	client := newSliceServer()
	sim, _ := startTestSimulation(t, ctx, cfg, client)
	if err := sim.publish(ctx, noProgress); err != nil {
		t.Fatal(err)
	}
	sim.stop()

	cfg.PartitionableAlpha = true
	sim, changed := startTestSimulation(t, ctx, cfg, client)
	// The kept slices lack the alpha fields: no pool is as wanted yet.
	want := map[poolKey]*resourceslice.Pool{}
	for i := range changed {
		want[changed[i].key()] = &changed[i].pool
	}
	sim.observer.expect(want)
	if done, total, _ := sim.observer.state(); done != 0 || total != 3 {
		t.Errorf("%d of %d pools done with the old content, want 0 of 3", done, total)
	}
	if err := sim.publish(ctx, noProgress); err != nil {
		t.Fatal(err)
	}
	sim.stop()
	if st := sim.stats(); st.NumCreates != 0 || st.NumUpdates == 0 {
		t.Errorf("publisher stats %+v, want updates only", st)
	}
	for pool, ss := range listSlices(t, client) {
		for _, s := range ss {
			if len(s.Spec.Devices) > 0 && s.Spec.PartitionTypeAttribute == nil {
				t.Errorf("pool %s slice %s was not updated", pool, s.Name)
			}
		}
	}
}

func TestSimulationRejectsRealNodeNames(t *testing.T) {
	t.Parallel()
	_, ctx := ktesting.NewTestContext(t)
	cfg := simulationConfig(3)
	_, nodes := buildTestNodes(t, cfg)
	client := newSliceServer(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sim-1"}})
	if _, err := startSimulation(ctx, shared(client), cfg.DriverName, nodes); err == nil || !strings.Contains(err.Error(), "node sim-1 exists") {
		t.Errorf("error %v, want one naming node sim-1", err)
	}
}

// TestSimulationFailsOnDroppedFields: an API server that drops the alpha
// fields (feature gates off) ends publish with the publisher's report.
func TestSimulationFailsOnDroppedFields(t *testing.T) {
	t.Parallel()
	_, ctx := ktesting.NewTestContext(t)
	cfg := simulationConfig(2)
	cfg.PartitionableAlpha = true
	client := newSliceServer()
	client.PrependReactor("create", "resourceslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		action.(k8stesting.CreateAction).GetObject().(*resourceapi.ResourceSlice).Spec.PartitionTypeAttribute = nil
		return false, nil, nil
	})
	sim, _ := startTestSimulation(t, ctx, cfg, client)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := sim.publish(ctx, noProgress)
	var dropped *resourceslice.DroppedFieldsError
	if !errors.As(err, &dropped) || !strings.Contains(err.Error(), "DRAPartitionableDevicesType") {
		t.Errorf("error %v, want a DroppedFieldsError naming DRAPartitionableDevicesType", err)
	}
}

// TestSimulationTimesOut: a publisher that cannot create slices makes
// publish time out, naming the progress and the publisher's error.
func TestSimulationTimesOut(t *testing.T) {
	t.Parallel()
	_, ctx := ktesting.NewTestContext(t)
	cfg := simulationConfig(2)
	client := newSliceServer()
	client.PrependReactor("create", "resourceslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("quota exceeded")
	})
	sim, _ := startTestSimulation(t, ctx, cfg, client)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := sim.publish(ctx, noProgress)
	if err == nil || !strings.Contains(err.Error(), "0 of 2 pools done") || !strings.Contains(err.Error(), "quota exceeded") {
		t.Errorf("error %v, want a timeout with 0 of 2 pools done and the publisher's error", err)
	}
}

func TestSimulate(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			t.Parallel()
			_, ctx := ktesting.NewTestContext(t)
			cfg := simulationConfig(4)
			cfg.Profile, cfg.GPUsPerNode, cfg.Keep = "dgx-h100", 12, keep
			client := newSliceServer()
			var out strings.Builder
			res, err := run(ctx, cfg, shared(client), &out)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(out.String())
			// 12 GPUs without MIG: one slice of 12 devices per node.
			if res.Nodes != 4 || res.SlicesPerNode != 1 || res.DevicesPerNode != 12 {
				t.Errorf("result %+v, want 4 nodes of 1 slice with 12 devices", res)
			}
			if res.Build <= 0 || res.Start <= 0 || res.Publish <= 0 || (res.Delete > 0) == keep {
				t.Errorf("times %+v: want all set, Delete only without keep", res)
			}
			wantDeletes := map[bool]int64{false: 4, true: 0}[keep]
			if res.Stats.NumCreates != 4 || res.Stats.NumDeletes != wantDeletes {
				t.Errorf("stats %+v, want 4 creates and %d deletes", res.Stats, wantDeletes)
			}
			if got := len(listSlices(t, client)); got != map[bool]int{false: 0, true: 4}[keep] {
				t.Errorf("%d pools left in the API server", got)
			}
			for _, line := range []string{
				"Built 4 pools for 4 nodes (dgx-h100: 4 slices, 48 devices) in ",
				"Started 4 publishers in ",
				"Published 4 slices with 48 devices for 4 nodes in ",
				map[bool]string{false: "Deleted the simulated slices in ", true: "Kept the slices; a later run for the same nodes without keeping them deletes them"}[keep],
				fmt.Sprintf("Publisher API calls: 4 creates, 0 updates, %d deletes", wantDeletes),
			} {
				if !strings.Contains(out.String(), line) {
					t.Errorf("output lacks %q:\n%s", line, out.String())
				}
			}
		})
	}
}

func TestSimulateRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	cfg := simulationConfig(0)
	if _, err := Run(t.Context(), cfg, io.Discard); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("error %v, want ErrInvalidConfig", err)
	}
}
