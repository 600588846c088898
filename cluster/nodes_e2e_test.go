package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"drakit.dev/drakit/cluster/images"
)

// TestMultiNodeUpDownLeavesNothingBehind brings a real three-node cluster
// up, checks that every node is schedulable with its own kubelet and
// containerd, runs a hostNetwork pod pinned to node 3 (its containers in
// node 3's cgroup root, its sandbox on node 3's containerd), and checks that
// Down, not told how many nodes there are, leaves nothing of any node behind.
func TestMultiNodeUpDownLeavesNothingBehind(t *testing.T) {
	cfg := e2eConfig(t)
	cfg.Nodes = 3
	skipUnlessClusterCanRun(t, cfg)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	before := snapshotHost(t, cfg)
	downDone := false
	t.Cleanup(func() {
		if !downDone {
			if err := Down(context.Background(), cfg); err != nil {
				t.Errorf("cleanup Down: %v", err)
			}
		}
	})

	t0 := time.Now()
	if err := Up(ctx, cfg); err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("up of %d nodes: %v", cfg.Nodes, time.Since(t0).Round(time.Millisecond))

	// Status, asked without --nodes, finds all three from the run dir.
	asked := cfg
	asked.Nodes = 1
	st, err := Status(ctx, asked)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Up || len(st.Nodes) != 3 {
		t.Fatalf("Status: up %v, %d nodes; want up with 3: %+v", st.Up, len(st.Nodes), st)
	}
	components := map[string]procRef{}
	for _, n := range st.Nodes {
		if n.State != string(nodeSchedulable) {
			t.Errorf("node %s is %s, want schedulable", n.Name, n.State)
		}
		for _, c := range n.Components {
			if !c.Healthy {
				t.Errorf("%s of node %s is not healthy: %s", c.Name, n.Name, c.Detail)
			}
			ref, err := refOf(c.PID)
			if err != nil {
				t.Fatalf("%s of node %s: %v", c.Name, n.Name, err)
			}
			components[c.Name+"@"+n.Name] = ref
		}
	}
	for _, c := range st.Components[:4] {
		ref, err := refOf(c.PID)
		if err != nil {
			t.Fatal(err)
		}
		components[c.Name] = ref
	}

	third, _ := NodePaths(cfg, 3)
	pod := runPinnedPod(ctx, t, cfg, third.Name)
	procs, err := listProcesses()
	if err != nil {
		t.Fatal(err)
	}
	inThird := 0
	for _, p := range procs {
		if strings.Contains(strings.Join(p.Cgroups, " "), "pod"+string(pod.UID)) {
			if !p.inCgroup(third.CgroupRoot) {
				t.Errorf("process %d of the pod on node 3 is in cgroups %v, not below %s", p.PID, p.Cgroups, third.CgroupRoot)
			}
			inThird++
		}
	}
	if inThird == 0 {
		t.Errorf("no process of the pod on node 3 is in its cgroup root %s", third.CgroupRoot)
	}

	recorded := recordClusterProcesses(t, cfg, components)
	if len(recorded) < 4+2*cfg.Nodes+2 { // + a shim and the pod's sandbox
		t.Errorf("recorded only %d processes before Down (%v)", len(recorded), recorded)
	}
	if err := Down(ctx, asked); err != nil {
		t.Fatalf("Down: %v", err)
	}
	downDone = true
	assertNothingLeft(t, cfg, before, recorded)
}

// runPinnedPod runs a hostNetwork pause pod on node and waits until it runs
// there, with the node's address.
func runPinnedPod(ctx context.Context, t *testing.T, cfg Config, node string) *corev1.Pod {
	t.Helper()
	client, err := Client(cfg)
	if err != nil {
		t.Fatal(err)
	}
	grace := int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: "default"},
		Spec: corev1.PodSpec{
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: &grace,
			NodeSelector:                  map[string]string{corev1.LabelHostname: node},
			Containers:                    []corev1.Container{{Name: "pause", Image: images.PauseImage, ImagePullPolicy: corev1.PullNever}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && got.Status.Phase == corev1.PodRunning {
			if got.Spec.NodeName != node || got.Status.PodIP != node {
				t.Errorf("pod runs on %s with IP %s, want %s", got.Spec.NodeName, got.Status.PodIP, node)
			}
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not Running on %s after 60s: %+v, err %v", node, got.Status, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
