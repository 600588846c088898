package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// nodeOptions are the GPU driver's options for node 2 of a multi-node local
// cluster in /r.
func nodeOptions() Options {
	opts := localClusterOptions()
	opts.Node = "127.0.0.2"
	opts.KubeletRootDir, opts.CDIDir, opts.HostRoot = "/r/nodes/2/kubelet/root", "/r/nodes/2/cdi", "/r/nodes/2/emulator"
	return opts
}

// TestPinToNode checks that a deployment pinned to a node differs from the
// unpinned one in its DaemonSet's name, NodeLabel and nodeSelector only, and
// that the three drivers pin alike.
func TestPinToNode(t *testing.T) {
	t.Parallel()
	pinned := nodeOptions()
	unpinned := pinned
	unpinned.Node = ""
	got, err := Objects(pinned)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Objects(unpinned)
	if err != nil {
		t.Fatal(err)
	}
	ds := got.DaemonSet
	if ds.Name != "drakit-driver-127-0-0-2" {
		t.Errorf("DaemonSet name %s, want drakit-driver-127-0-0-2", ds.Name)
	}
	for what, set := range map[string]map[string]string{"labels": ds.Labels, "selector": ds.Spec.Selector.MatchLabels, "pod labels": ds.Spec.Template.Labels} {
		if set[NodeLabel] != "127.0.0.2" || set[AppLabel] != Name {
			t.Errorf("%s %v: want %s=127.0.0.2 and %s=%s", what, set, NodeLabel, AppLabel, Name)
		}
	}
	if diff := cmp.Diff(map[string]string{corev1.LabelHostname: "127.0.0.2"}, ds.Spec.Template.Spec.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	// Everything else is the unpinned rendering.
	ds = ds.DeepCopy()
	ds.Name = want.DaemonSet.Name
	for _, set := range []map[string]string{ds.Labels, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels} {
		delete(set, NodeLabel)
	}
	ds.Spec.Template.Spec.NodeSelector = want.DaemonSet.Spec.Template.Spec.NodeSelector
	if diff := cmp.Diff(want.DaemonSet, ds); diff != "" {
		t.Errorf("pinned DaemonSet differs beyond name, labels and nodeSelector (-unpinned +pinned):\n%s", diff)
	}
	if diff := cmp.Diff(want.Policy, got.Policy); diff != "" {
		t.Errorf("pinning changed the policy:\n%s", diff)
	}
	// The volumes are node 2's.
	if !strings.Contains(volumeHostPaths(ds.Spec.Template.Spec), "/r/nodes/2/kubelet/root/plugins_registry") {
		t.Errorf("pinned DaemonSet volumes %s", volumeHostPaths(ds.Spec.Template.Spec))
	}

	nic := DefaultOptions(KindNIC)
	nic.Node = "127.0.0.3"
	nm, err := Objects(nic)
	if err != nil {
		t.Fatal(err)
	}
	plain := DefaultOptions(KindPlain)
	plain.Node = "127.0.0.3"
	pm, err := Objects(plain)
	if err != nil {
		t.Fatal(err)
	}
	for name, ds := range map[string]string{NICName: nm.DaemonSet.Name, PlainName: pm.DaemonSet.Name} {
		if ds != name+"-127-0-0-3" {
			t.Errorf("DaemonSet %s pinned to 127.0.0.3: %s", name, ds)
		}
	}
	if nm.DaemonSet.Spec.Template.Spec.NodeSelector[corev1.LabelHostname] != "127.0.0.3" ||
		pm.DaemonSet.Spec.Template.Spec.NodeSelector[corev1.LabelHostname] != "127.0.0.3" {
		t.Error("the NIC or plain driver's pinned pods have no nodeSelector for 127.0.0.3")
	}
}

func volumeHostPaths(pod corev1.PodSpec) string {
	var paths []string
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			paths = append(paths, v.HostPath.Path)
		}
	}
	return strings.Join(paths, " ")
}

func TestNodeValidation(t *testing.T) {
	t.Parallel()
	for node, want := range map[string]string{
		"Node_1":                "Node (--node) \"Node_1\" is not a node name",
		strings.Repeat("n", 60): "too long",
	} {
		opts := nodeOptions()
		opts.Node = node
		if err := opts.Validate(); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), want) {
			t.Errorf("Node %q: Validate = %v, want ErrInvalidOptions with %q", node, err, want)
		}
	}
}

// TestNodeValidationPerDriver: each driver's node may be as long as leaves
// its own DaemonSet name, <workload>-<node>, at 63 characters; one more
// is refused, naming the DaemonSet.
func TestNodeValidationPerDriver(t *testing.T) {
	t.Parallel()
	gpu, nic, cpu, tpu, plain := DefaultOptions(KindGPU), DefaultOptions(KindNIC), DefaultOptions(KindCPU), DefaultOptions(KindTPU), DefaultOptions(KindPlain)
	// Each driver's Node and its Validate (bound to the same options).
	for workload, o := range map[string]struct {
		node     *string
		validate func() error
	}{
		Name:      {&gpu.Node, gpu.Validate},
		NICName:   {&nic.Node, nic.Validate},
		CPUName:   {&cpu.Node, cpu.Validate},
		TPUName:   {&tpu.Node, tpu.Validate},
		PlainName: {&plain.Node, plain.Validate},
	} {
		validate := func(node string) error {
			*o.node = node
			return o.validate()
		}
		longest := strings.Repeat("n", 63-len(workload)-1)
		if err := validate(longest); err != nil {
			t.Errorf("%s: node of %d characters: %v", workload, len(longest), err)
		}
		over := longest + "n"
		err := validate(over)
		want := fmt.Sprintf("%s-%s has 64 characters", workload, over)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: node of %d characters: Validate = %v, want ErrInvalidOptions with %q", workload, len(over), err, want)
		}
	}
}

// TestApplyAndDeletePerNode deploys the driver on two nodes, each with its
// own paths, and deletes it from one: the other node's DaemonSet and the
// shared objects stay.
func TestApplyAndDeletePerNode(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	second, third := nodeOptions(), nodeOptions()
	third.Node = "127.0.0.3"
	third.KubeletRootDir, third.CDIDir, third.HostRoot = "/r/nodes/3/kubelet/root", "/r/nodes/3/cdi", "/r/nodes/3/emulator"
	var simulations []<-chan struct{}
	for _, opts := range []Options{second, third} {
		opts.Timeout = 10 * time.Second
		simulations = append(simulations, simulateWorkload(ctx, t, client, gpuWorkload.on(opts.Node), opts.DriverName, true))
		if err := Apply(ctx, client, opts); err != nil {
			t.Fatalf("Apply on %s: %v", opts.Node, err)
		}
	}
	for _, opts := range []Options{second, third} {
		ds, err := client.AppsV1().DaemonSets(Namespace).Get(ctx, pinnedName(Name, opts.Node), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if paths := volumeHostPaths(ds.Spec.Template.Spec); !strings.Contains(paths, opts.CDIDir) {
			t.Errorf("DaemonSet of %s mounts %s, not its CDI dir %s", opts.Node, paths, opts.CDIDir)
		}
	}
	cancel()
	for _, done := range simulations {
		<-done
	}
	second.Timeout = 5 * time.Second
	// The fake client has no garbage collector: the test plays it for the
	// pod of the deleted DaemonSet.
	if err := client.CoreV1().Pods(Namespace).Delete(t.Context(), pinnedName(Name, second.Node)+"-abcde", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Delete(t.Context(), client, second); err != nil {
		t.Fatalf("Delete on %s: %v", second.Node, err)
	}
	if _, err := client.AppsV1().DaemonSets(Namespace).Get(t.Context(), pinnedName(Name, second.Node), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("DaemonSet of %s after its Delete: %v", second.Node, err)
	}
	if _, err := client.AppsV1().DaemonSets(Namespace).Get(t.Context(), pinnedName(Name, third.Node), metav1.GetOptions{}); err != nil {
		t.Errorf("DaemonSet of %s after deleting %s's: %v", third.Node, second.Node, err)
	}
	if _, err := client.ResourceV1().DeviceClasses().Get(t.Context(), third.DriverName, metav1.GetOptions{}); err != nil {
		t.Errorf("device class after deleting one node's driver: %v", err)
	}
}
