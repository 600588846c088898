package tpudriver

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"drakit.dev/drakit/internal/tpuhw"
)

// TestNodeResourcesSeam: the exported seam lays chips out as discovery
// does (index order, coordinates from the tpu-env's slice) and refuses an
// unknown generation.
func TestNodeResourcesSeam(t *testing.T) {
	t.Parallel()
	g := geometry(t, "2x2x4", "2x2x1")
	env := tpuhw.TPUEnv{Generation: "v5p", SliceName: "torus-a", Slice: g, WorkerID: 2}
	res, err := NodeResources(DefaultDriverName, "n", env, []string{"pci0000:00", "pci0000:40"})
	if err != nil {
		t.Fatal(err)
	}
	h := &host{env: env}
	for i := range 4 {
		h.chips = append(h.chips, chip{Index: i, Generation: tpuhw.Generation{Name: "v5p"}, Coord: g.ChipCoord(2, i)})
	}
	h.chips[0].PCIeRoot, h.chips[1].PCIeRoot = "pci0000:00", "pci0000:40"
	want := nodeResources(DefaultDriverName, "n", h)
	if !equality.Semantic.DeepEqual(res, want) {
		t.Errorf("NodeResources %+v, want discovery's %+v", res, want)
	}
	devs := res.Pools["n"].Slices[0].Devices
	if len(devs) != 4 || *devs[2].Attributes[DefaultDriverName+"/"+AttrZ].IntValue != 2 {
		t.Fatalf("devices %+v, want 4 at z=2", devs)
	}
	if _, ok := devs[3].Attributes["resource.kubernetes.io/pcieRoot"]; ok {
		t.Error("chip 3 has a pcieRoot though none was given")
	}
	env.Generation = "v9"
	if _, err := NodeResources(DefaultDriverName, "n", env, nil); !errors.Is(err, ErrUnknownGeneration) {
		t.Errorf("unknown generation: %v, want ErrUnknownGeneration", err)
	}
}
