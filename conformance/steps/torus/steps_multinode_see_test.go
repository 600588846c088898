package torus

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/kit/kittest"
	"drakit.dev/drakit/conformance/probe"
)

// multiNodeTorusWorld is a world over the four hosts of a 2x2x4 slice of
// 2x2x1 hosts (workers 0-3 on 127.0.0.1-4) with pods on them that saw
// report.
func multiNodeTorusWorld(t *testing.T, pods map[string]*probe.Report) *world {
	t.Helper()
	base := t.TempDir()
	roots := map[string]string{}
	for w, node := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		roots[node] = filepath.Join(base, node)
		writeHost(t, roots[node], w)
	}
	w := &world{World: kittest.World(t, nil, "test")}
	w.Driver.DriverName, w.Driver.TorusShapeAttribute, w.Driver.TorusSubsliceClassName = "tpu.drakit.dev", "shape", "subslice.tpu.drakit.dev"
	w.Cfg.NodeEmulatorRoots = roots
	client := fake.NewClientset()
	for node, r := range pods {
		name := "shared-" + node
		if _, err := client.CoreV1().Pods("test").Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: name},
			Spec: corev1.PodSpec{NodeName: node}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.Pods[name] = &kit.PodRecord{Name: name, Report: r}
	}
	w.Kube = client
	return w
}

// subsliceOn is a picked sub-slice of shape on hosts, with the pods of
// multiNodeTorusWorld on them.
func subsliceOn(shape string, hosts ...string) *kit.MultiNodeDevice {
	m := &kit.MultiNodeDevice{Class: "subslice.tpu.drakit.dev", Subslice: true, Identity: "TPU-SUB-x", Hosts: hosts, Nodes: hosts, Pods: map[string]string{},
		Device: kit.PublishedDevice{Pool: "slice-torus-a", Name: "sub", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"tpu.drakit.dev/shape": {StringValue: ptr.To(shape)}}}}
	for _, h := range hosts {
		m.Pods[h] = "shared-" + h
	}
	return m
}

// TestMultiNodeSubsliceSeen: a 2x2x2 sub-slice on workers 3 and 0 (which
// wrap along z) whose pods see all of their hosts' chips passes; a pod
// that misses a chip, a node selection of hosts that are not connected,
// and a shape the hosts do not have fail.
func TestMultiNodeSubsliceSeen(t *testing.T) {
	t.Parallel()
	all := accelReport(0, 1, 2, 3)
	for _, tc := range []struct {
		Name  string
		pods  map[string]*probe.Report
		m     *kit.MultiNodeDevice
		wants string
	}{
		{"whole hosts", map[string]*probe.Report{"127.0.0.1": all, "127.0.0.4": all}, subsliceOn("2x2x2", "127.0.0.1", "127.0.0.4"), ""},
		{"a chip short", map[string]*probe.Report{"127.0.0.1": all, "127.0.0.4": accelReport(0, 1, 2)},
			subsliceOn("2x2x2", "127.0.0.1", "127.0.0.4"), "pod shared-127.0.0.4 sees chips [/dev/accel0 /dev/accel1 /dev/accel2], its host (worker 3"},
		{"no chips", map[string]*probe.Report{"127.0.0.1": all, "127.0.0.4": accelReport()},
			subsliceOn("2x2x2", "127.0.0.1", "127.0.0.4"), "pod shared-127.0.0.4 sees chips []"},
		{"hosts apart", map[string]*probe.Report{"127.0.0.1": all, "127.0.0.3": all},
			subsliceOn("2x2x2", "127.0.0.1", "127.0.0.3"), "are not connected in the 2x2x4 torus"},
		{"wrong shape", map[string]*probe.Report{"127.0.0.1": all, "127.0.0.2": all},
			subsliceOn("2x2x4", "127.0.0.1", "127.0.0.2"), "have 8 chips, the shape 16"},
	} {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			w := multiNodeTorusWorld(t, tc.pods)
			w.MultiNode = tc.m
			_, err := w.podsOnEachNodeSee(t.Context())
			switch {
			case tc.wants == "" && err != nil:
				t.Errorf("podsOnEachNodeSee: %v", err)
			case tc.wants != "" && (err == nil || !strings.Contains(err.Error(), tc.wants)):
				t.Errorf("podsOnEachNodeSee: %v, want a finding with %q", err, tc.wants)
			}
		})
	}
}

// TestMultiNodeContractNeedsEachNode: for a device that is no sub-slice,
// the kit reads one node's kubelet state; the same claim is prepared on
// every node, so pods on other nodes leave the step skipped, never passed.
func TestMultiNodeContractNeedsEachNode(t *testing.T) {
	t.Parallel()
	all := accelReport(0, 1, 2, 3)
	w := multiNodeTorusWorld(t, map[string]*probe.Report{"127.0.0.1": all, "127.0.0.2": all})
	m := subsliceOn("2x2x2", "127.0.0.1", "127.0.0.2")
	m.Subslice = false
	w.MultiNode = m
	w.Cfg.NodeKubeletRootDir, w.Cfg.NodeCDIDir = t.TempDir(), t.TempDir()
	for _, node := range []string{"", "127.0.0.9"} {
		w.Cfg.NodeName = node
		_, err := w.podsOnEachNodeSee(t.Context())
		if !errors.Is(err, godog.ErrSkip) || !strings.Contains(err.Error(), "cannot judge what pods shared-127.0.0.1 on 127.0.0.1, shared-127.0.0.2 on 127.0.0.2 see") {
			t.Errorf("node name %q: %v, want a skip naming both pods", node, err)
		}
	}
}
