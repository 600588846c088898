package torus

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/kit/kittest"
	"drakit.dev/drakit/conformance/probe"
	"drakit.dev/drakit/internal/tpuhw"
)

// writeHost writes the ground truth of worker w of a 2x2x4 slice of 2x2x1
// hosts below root.
func writeHost(t *testing.T, root string, worker int) {
	t.Helper()
	g, err := tpuhw.NewSlice(tpuhw.Bounds{X: 2, Y: 2, Z: 4}, tpuhw.Bounds{X: 2, Y: 2, Z: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := &tpuhw.HostFile{APIVersion: tpuhw.HostFileVersion, Generation: "v5p", Slice: "torus-a", Topology: "2x2x4", ChipBounds: "2x2x1", WorkerID: worker}
	for i := range 4 {
		c := g.ChipCoord(worker, i)
		f.Chips = append(f.Chips, tpuhw.Chip{Index: i, X: c.X, Y: c.Y, Z: c.Z, PCIAddress: "0000:05:00.0", IOMMUGroup: i, Accel: tpuhw.AccelPath(i)})
	}
	var b bytes.Buffer
	if err := tpuhw.WriteHostFile(&b, f); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, tpuhw.HostFileRelativePath)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func accelReport(minors ...uint32) *probe.Report {
	r := &probe.Report{Devices: []probe.DeviceNode{{Path: "/dev/null", Type: "c", Major: 1, Minor: 3}}}
	for _, m := range minors {
		r.Devices = append(r.Devices, probe.DeviceNode{Path: tpuhw.AccelPath(int(m)), Type: "c", Major: tpuhw.AccelMajor, Minor: m})
	}
	return r
}

// TestTorusChecksAgainstGroundTruth: pods on the hosts of workers 3 and 0
// that see all their chips see the 2x2x2 sub-torus wrapping from z=3 to
// z=0; pods on workers 0 and 2 do not; a chip seen twice across groups is
// a finding; a host's pod that misses a chip does not see its host.
func TestTorusChecksAgainstGroundTruth(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	roots := map[string]string{}
	var objs []corev1.Pod
	for w, node := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		roots[node] = filepath.Join(base, node)
		writeHost(t, roots[node], w)
	}
	w := &world{World: kittest.World(t, nil, "")}
	w.Cfg.NodeEmulatorRoots = roots
	w.Ns = "test"
	pod := func(name, node string, r *probe.Report) {
		objs = append(objs, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: name}, Spec: corev1.PodSpec{NodeName: node}})
		w.Pods[name] = &kit.PodRecord{Name: name, Report: r}
	}
	pod("a-0", "127.0.0.4", accelReport(0, 1, 2, 3))
	pod("a-1", "127.0.0.1", accelReport(0, 1, 2, 3))
	pod("b-0", "127.0.0.1", accelReport(0, 1, 2, 3))
	pod("b-1", "127.0.0.3", accelReport(0, 1, 2, 3))
	pod("short", "127.0.0.2", accelReport(0, 1, 3))
	client := fake.NewClientset()
	for i := range objs {
		if _, err := client.CoreV1().Pods("test").Create(t.Context(), &objs[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.Kube = client
	w.torus.groups = map[string][]string{"a": {"a-0", "a-1"}, "b": {"b-0", "b-1"}}

	if _, err := w.podsSeeSubTorus(t.Context(), "a", "2x2x2"); err != nil {
		t.Errorf("group a (workers 3, 0): %v", err)
	}
	if _, err := w.podsSeeSubTorus(t.Context(), "b", "2x2x2"); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("group b (workers 0, 2): %v, want not connected", err)
	}
	if _, err := w.podsSeeDisjoint(t.Context(), "a", "b"); err == nil || !strings.Contains(err.Error(), "both see the chip at 0,0,0") {
		t.Errorf("groups a and b share worker 0: %v", err)
	}
	if _, err := w.podSeesItsHost(t.Context(), "a-0"); err != nil {
		t.Errorf("a-0: %v", err)
	}
	if _, err := w.podSeesItsHost(t.Context(), "short"); err == nil || !strings.Contains(err.Error(), "sees chips [/dev/accel0 /dev/accel1 /dev/accel3]") {
		t.Errorf("short: %v", err)
	}
	w.Pods["wrong"] = &kit.PodRecord{Name: "wrong", Report: &probe.Report{Devices: []probe.DeviceNode{{Path: "/dev/accel1", Type: "c", Major: tpuhw.AccelMajor, Minor: 2}}}}
	if _, err := client.CoreV1().Pods("test").Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "wrong"},
		Spec: corev1.PodSpec{NodeName: "127.0.0.2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, bad, err := w.podChips(t.Context(), "wrong"); err != nil || len(bad) != 1 || !strings.Contains(bad[0], "as 261:2, the host's chip 1 is 261:1") {
		t.Errorf("wrong device number: %v %v", bad, err)
	}
}

func TestAllocationNodes(t *testing.T) {
	t.Parallel()
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "sub"}, Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"127.0.0.4"}}}},
			{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"127.0.0.1"}}}},
		}},
	}}}
	got, err := allocationNodes(c)
	if err != nil || strings.Join(got, ",") != "127.0.0.1,127.0.0.4" {
		t.Errorf("allocationNodes = %v, %v", got, err)
	}
	c.Status.Allocation.NodeSelector = nil
	if _, err := allocationNodes(c); err == nil {
		t.Error("no node selector: no error")
	}
}

// TestTorusRuntimeEnv: each pod of a sub-slice has its own worker id, the
// same host list naming its node there, the shape and its chips.
func TestTorusRuntimeEnv(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	w := &world{World: kittest.World(t, nil, "test")}
	w.Cfg.NodeEmulatorRoots = map[string]string{}
	client := fake.NewClientset()
	w.Kube = client
	add := func(name, node string, worker int, env map[string]string) {
		root := filepath.Join(base, node)
		w.Cfg.NodeEmulatorRoots[node] = root
		writeHost(t, root, worker)
		r := accelReport(0, 1, 2, 3)
		r.Env = env
		w.Pods[name] = &kit.PodRecord{Name: name, Report: r}
		if _, err := client.CoreV1().Pods("test").Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: name},
			Spec: corev1.PodSpec{NodeName: node}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env := func(id string) map[string]string {
		return map[string]string{"TPU_TOPOLOGY": "2x2x2", "TPU_WORKER_ID": id, "TPU_WORKER_HOSTNAMES": "127.0.0.4,127.0.0.1", "TPU_VISIBLE_CHIPS": "0,1,2,3"}
	}
	add("ok-0", "127.0.0.4", 3, env("0"))
	add("ok-1", "127.0.0.1", 0, env("1"))
	add("bad-0", "127.0.0.2", 1, env("0"))
	add("bad-1", "127.0.0.3", 2, env("0"))
	w.torus.groups = map[string][]string{"ok": {"ok-0", "ok-1"}, "bad": {"bad-0", "bad-1"}}
	if _, err := w.podsGetRuntimeEnv(t.Context(), "ok", "2x2x2"); err != nil {
		t.Errorf("ok: %v", err)
	}
	_, err := w.podsGetRuntimeEnv(t.Context(), "bad", "2x2x2")
	if err == nil || !strings.Contains(err.Error(), "both have TPU_WORKER_ID=0") || !strings.Contains(err.Error(), "does not name its node") {
		t.Errorf("bad: %v", err)
	}
}
