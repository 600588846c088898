package tpudriver

// Tests against drakit's emulator: hosts rendered from testdata/host-*.yaml
// (emulator/render) are the fake hardware. Only tests import the emulator
// (TestDriverDoesNotImportTheEmulator).

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
	"drakit.dev/drakit/internal/tpuhw"
	"drakit.dev/drakit/reference/pluginharness"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

const (
	uidA = "aaaaaaaa-0000-0000-0000-000000000001"
	uidB = "bbbbbbbb-0000-0000-0000-000000000002"
	uidC = "cccccccc-0000-0000-0000-000000000003"
)

// emulatedHost renders testdata/<name>.yaml and returns its root.
func emulatedHost(t *testing.T, name string) string {
	t.Helper()
	p, err := profile.Load(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := render.Render(t.Context(), p, render.Options{Root: root}); err != nil {
		if strings.Contains(err.Error(), "mknod") {
			t.Skipf("rendering the emulated host needs mknod (root or CAP_MKNOD): %v", err)
		}
		t.Fatal(err)
	}
	return root
}

// nodePools are the node pools of the four hosts of torus-a, as the
// driver on each publishes them, nodes 127.0.0.1..4 for workers 0..3.
func nodePools(t *testing.T) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	g := geometry(t, "2x2x4", "2x2x1")
	for w := range 4 {
		node := "127.0.0." + string(rune('1'+w))
		h := &host{env: tpuhw.TPUEnv{Generation: "v5p", SliceName: "torus-a", Slice: g, WorkerID: w}}
		for i := range 4 {
			h.chips = append(h.chips, chip{Index: i, Generation: tpuhw.Generation{Name: "v5p"}, Coord: g.ChipCoord(w, i)})
		}
		res := nodeResources(DefaultDriverName, node, h)
		out = append(out, &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: node + "-tpu"},
			Spec: resourceapi.ResourceSliceSpec{Driver: DefaultDriverName, NodeName: ptr.To(node),
				Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}, Devices: res.Pools[node].Slices[0].Devices},
		})
	}
	return out
}

type testPlugin = pluginharness.Plugin[preparedChips, *preparedChips]

func startPlugin(t *testing.T, root, nodeName string, client kubernetes.Interface) (*testPlugin, string) {
	t.Helper()
	base := t.TempDir()
	cfg := DefaultConfig()
	cfg.NodeName, cfg.HostRoot = nodeName, root
	cfg.StateDir, cfg.CDIDir = filepath.Join(base, "state"), filepath.Join(base, "cdi")
	n, err := newNode(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	hcfg := harnessConfig(cfg, n)
	hcfg.Fatal = func(err error) { t.Errorf("fatal: %v", err) }
	p, err := pluginharness.New[preparedChips, *preparedChips](t.Context(), n, hcfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, cfg.CDIDir
}

func readSpec(t *testing.T, cdiDir, uid string) *cdispec.Spec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cdiDir, "k8s."+DefaultDriverName+"-claim_"+uid+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var s cdispec.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func envMap(env []string) map[string]string {
	out := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

// TestDiscoverEmulatedHost: the node pool of worker 3 has its four chips at
// z=3 with the contract's attributes.
func TestDiscoverEmulatedHost(t *testing.T) {
	root := emulatedHost(t, "host-3")
	h, err := discover(root, filepath.Join(root, tpuhw.MetadataTPUEnvRelativePath))
	if err != nil {
		t.Fatal(err)
	}
	res := nodeResources(DefaultDriverName, "127.0.0.4", h)
	devs := res.Pools["127.0.0.4"].Slices[0].Devices
	if len(devs) != 4 {
		t.Fatalf("%d devices, want 4", len(devs))
	}
	// The seam reference/simulate uses publishes the same pool from the
	// tpu-env and the PCIe roots, without sysfs.
	var roots []string
	for _, c := range h.chips {
		roots = append(roots, c.PCIeRoot)
	}
	if seam, err := NodeResources(DefaultDriverName, "127.0.0.4", h.env, roots); err != nil || !equality.Semantic.DeepEqual(seam, res) {
		t.Errorf("NodeResources from tpu-env: %v, %+v; discovery published %+v", err, seam, res)
	}
	for i, d := range devs {
		a := func(n string) resourceapi.DeviceAttribute {
			return d.Attributes[resourceapi.QualifiedName(DefaultDriverName+"/"+n)]
		}
		if d.Name != ChipDevice(i) || *a(AttrGeneration).StringValue != "v5p" || *a(AttrSlice).StringValue != "torus-a" ||
			*a(AttrTopology).StringValue != "2x2x4" || *a(AttrX).IntValue != int64(i%2) || *a(AttrY).IntValue != int64(i/2) ||
			*a(AttrZ).IntValue != 3 || *a(AttrWorkerID).IntValue != 3 || *a(AttrType).StringValue != TypeChip {
			t.Errorf("device %d: %s %+v", i, d.Name, d.Attributes)
		}
		if d.Attributes["resource.kubernetes.io/pcieRoot"].StringValue == nil {
			t.Errorf("device %s has no pcieRoot", d.Name)
		}
	}
}

// TestPrepareSubsliceOnEmulatedHost prepares, on worker 3, the 2x2x2
// sub-slice that wraps from z=3 to z=0: this host is the sub-slice's
// worker 0, its four chips are injected, and the environment names both
// hosts; a sub-slice without chips here is refused; a chip claim gets its
// chip.
func TestPrepareSubsliceOnEmulatedHost(t *testing.T) {
	root := emulatedHost(t, "host-3")
	client := harnesstest.NewFakeClient(nodePools(t)...)
	p, cdiDir := startPlugin(t, root, "127.0.0.4", client)

	claim := harnesstest.AllocatedClaim("sub", uidA, harnesstest.AllocResult(DefaultDriverName, "slice-torus-a", "tpu", "sub-2x2x2-0-0-3"))
	if r := harnesstest.PrepareOne(t, p, claim); r.Err != nil {
		t.Fatalf("prepare: %v", r.Err)
	}
	spec := readSpec(t, cdiDir, uidA)
	env := envMap(spec.ContainerEdits.Env)
	want := map[string]string{
		"TPU_TOPOLOGY": "2x2x2", "TPU_WORKER_ID": "0", "TPU_WORKER_HOSTNAMES": "127.0.0.4,127.0.0.1",
		"TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1", "TPU_HOST_BOUNDS": "1,1,2", "TPU_VISIBLE_CHIPS": "0,1,2,3",
		"TPU_ACCELERATOR_TYPE": "v5p-8", "TPU_SKIP_MDS_QUERY": "true",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q (env %v)", k, env[k], v, spec.ContainerEdits.Env)
		}
	}
	if len(spec.Devices) != 1 {
		t.Fatalf("%d CDI devices, want 1", len(spec.Devices))
	}
	var paths []string
	for _, n := range spec.Devices[0].ContainerEdits.DeviceNodes {
		paths = append(paths, n.Path)
		if n.HostPath != filepath.Join(root, n.Path) {
			t.Errorf("node %s from %s, want below the host root", n.Path, n.HostPath)
		}
		if _, err := os.Stat(n.HostPath); err != nil {
			t.Errorf("node %s: %v", n.Path, err)
		}
	}
	wantPaths := []string{"/dev/accel0", "/dev/vfio/0", "/dev/accel1", "/dev/vfio/1", "/dev/accel2", "/dev/vfio/2", "/dev/accel3", "/dev/vfio/3", "/dev/vfio/vfio"}
	if !slices.Equal(paths, wantPaths) {
		t.Errorf("device nodes %v, want %v", paths, wantPaths)
	}

	other := harnesstest.AllocatedClaim("other", uidB, harnesstest.AllocResult(DefaultDriverName, "slice-torus-a", "tpu", "sub-2x2x2-0-0-0"))
	if r := harnesstest.PrepareOne(t, p, other); r.Err == nil || !strings.Contains(r.Err.Error(), "no chip on this host") {
		t.Errorf("prepare a sub-slice of hosts 0-1 on host 3: %v", r.Err)
	}
	foreign := harnesstest.AllocatedClaim("foreign", uidB, harnesstest.AllocResult(DefaultDriverName, "slice-torus-b", "tpu", "sub-2x2x2-0-0-3"))
	if r := harnesstest.PrepareOne(t, p, foreign); r.Err == nil {
		t.Error("prepare a sub-slice of another slice succeeded")
	}

	chips := harnesstest.AllocatedClaim("chips", uidC,
		harnesstest.AllocResult(DefaultDriverName, "127.0.0.4", "a", "chip-1"), harnesstest.AllocResult(DefaultDriverName, "127.0.0.4", "b", "chip-2"))
	if r := harnesstest.PrepareOne(t, p, chips); r.Err != nil {
		t.Fatalf("prepare chips: %v", r.Err)
	}
	cenv := envMap(readSpec(t, cdiDir, uidC).ContainerEdits.Env)
	if cenv["TPU_VISIBLE_CHIPS"] != "1,2" || cenv["TPU_TOPOLOGY"] != "" {
		t.Errorf("chip claim env %v", cenv)
	}
	if errs := harnesstest.Unprepare(t, p, uidA, uidC); errs[uidA] != nil || errs[uidC] != nil {
		t.Errorf("unprepare: %v", errs)
	}
	if _, err := os.Stat(filepath.Join(cdiDir, "k8s."+DefaultDriverName+"-claim_"+uidA+".json")); !os.IsNotExist(err) {
		t.Errorf("spec of unprepared claim: %v", err)
	}
}

// TestControllerPlansFromNodePools: the controller's pools for the four
// node pools of torus-a.
func TestControllerPlansFromNodePools(t *testing.T) {
	var list []resourceapi.ResourceSlice
	for _, o := range nodePools(t) {
		list = append(list, *o.(*resourceapi.ResourceSlice))
	}
	pools := SubslicePools(t.Context(), DefaultControllerConfig(), list)
	pool, ok := pools["slice-torus-a"]
	if !ok || len(pools) != 1 {
		t.Fatalf("pools %v", pools)
	}
	var names []string
	for _, d := range pool.Slices[1].Devices {
		names = append(names, d.Name)
	}
	want := []string{"sub-2x2x2-0-0-0", "sub-2x2x2-0-0-1", "sub-2x2x2-0-0-2", "sub-2x2x2-0-0-3", "sub-2x2x4-0-0-0"}
	if !slices.Equal(names, want) {
		t.Errorf("devices %v, want %v", names, want)
	}
}

// TestDriverDoesNotImportTheEmulator: the driver and its command use the
// emulator in tests only.
func TestDriverDoesNotImportTheEmulator(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "drakit.dev/drakit/reference/tpudriver").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "drakit.dev/drakit/emulator") {
			t.Errorf("the TPU driver imports %s", pkg)
		}
	}
}
