package simulate

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"k8s.io/dynamic-resource-allocation/resourceslice"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
	"drakit.dev/drakit/reference/driver"
)

const testNode = "127.0.0.1"

// a100DynamicMIG is one A100-SXM4-40GB with MIG enabled and no instances.
const a100DynamicMIG = "testdata/a100-dynamic-mig.yaml"

// staticDiscoverer returns a fixed inventory.
type staticDiscoverer struct{ inv *driver.Inventory }

func (s staticDiscoverer) Discover(context.Context) (*driver.Inventory, error) { return s.inv, nil }

// nodePool is the pool the reference driver publishes on one node with
// inv's hardware.
func nodePool(t testing.TB, inv *driver.Inventory) resourceslice.Pool {
	t.Helper()
	res, err := driver.NodeResources(t.Context(), staticDiscoverer{inv}, driver.DefaultDriverName, testNode, false)
	if err != nil {
		t.Fatal(err)
	}
	return res.Pools[testNode]
}

func loadProfile(t testing.TB, path string) *profile.Profile {
	t.Helper()
	p, err := profile.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func builtinProfile(t testing.TB, name string) *profile.Profile {
	t.Helper()
	p, err := profile.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// renderAndDiscover renders p with the emulator's NVML shim into a new
// emulator root and discovers it as the driver does, through the shim and
// the rendered sysfs. A process keeps the first NVML library it loads, so
// it points that library at this root through nvmltest.RootEnv; tests that
// call it must not be parallel. It skips the test where rendering cannot
// create the device nodes (no CAP_MKNOD).
func renderAndDiscover(t *testing.T, p *profile.Profile) *driver.Inventory {
	t.Helper()
	shim := nvmltest.BuildShim(t)
	root := filepath.Join(t.TempDir(), "emulator")
	if err := render.Render(t.Context(), p, render.Options{Root: root, ShimLibrary: shim}); err != nil {
		if errors.Is(err, render.ErrDeviceNodes) {
			t.Skipf("rendering needs CAP_MKNOD: %v", err)
		}
		t.Fatal(err)
	}
	t.Setenv(nvmltest.RootEnv, root)
	disc, _, err := driver.NewNVMLDiscoverer(root, filepath.Join(root, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := disc.Discover(t.Context())
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	return inv
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
