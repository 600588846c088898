package driver

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// publishedTaints lists the pool's devices with their taints
// ("gpu-0" or "gpu-3 gpu.drakit.dev/xid=48:NoExecute,…").
func publishedTaints(t *testing.T, ctx context.Context, client *fake.Clientset) []string {
	t.Helper()
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		for _, d := range s.Spec.Devices {
			out = append(out, strings.TrimSpace(d.Name+" "+taintString(d.Taints)))
		}
	}
	return out
}

// poolGeneration is the generation of the pool's slices.
func poolGeneration(t *testing.T, ctx context.Context, client *fake.Clientset) int64 {
	t.Helper()
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list ResourceSlices: %d, %v; want one", len(list.Items), err)
	}
	return list.Items[0].Spec.Pool.Generation
}

func taintString(taints []resourceapi.DeviceTaint) string {
	var parts []string
	for _, tn := range taints {
		parts = append(parts, tn.Key+"="+tn.Value+":"+string(tn.Effect))
	}
	return strings.Join(parts, ",")
}

// waitPublished waits up to 30s for the published devices and taints.
func waitPublished(t *testing.T, ctx context.Context, client *fake.Clientset, want []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := publishedTaints(t, ctx, client)
		if cmp.Equal(want, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("published devices after 30s (-want +got):\n%s", cmp.Diff(want, got))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunPublishesFaults runs the driver over a fake fault source and
// checks, through the API and the kubelet's sockets, the whole loop: the
// health stream at start, a device Xid's taints, a lost GPU withdrawn (and
// refused by prepare), then a reset that clears it all.
func TestRunPublishesFaults(t *testing.T) {
	t.Parallel()
	root := newTestRoot(t, 0, 1, 3)
	cfg := runConfig(t, root)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
	claim := harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-1"))
	client := harnesstest.NewFakeClient(node, claim)
	faults := newFakeFaults()
	inv := testInventory()
	gpu1, gpu3 := inv.GPUs[1].UUID, inv.GPUs[2].UUID
	// Slowed down before the driver starts: the first publish has it.
	faults.set(gpu1, gpuFaults{Clocks: nvml.ClocksThrottleReasonHwThermalSlowdown})
	stop, errc := harnesstest.StartRun(t, t.Context(), func(ctx context.Context) error {
		return run(ctx, cfg, client, staticDiscoverer{inv}, root.lib, nil, faults.opener())
	})
	ctx := t.Context()
	harnesstest.WaitForSlices(t, ctx, client, errc, 20*time.Millisecond)
	waitPublished(t, ctx, client, []string{"gpu-0", "gpu-1 gpu.drakit.dev/slowdown=hw-thermal-slowdown:None", "gpu-3"})
	generation := poolGeneration(t, ctx, client)

	// The health stream, as the kubelet reads it.
	conn := harnesstest.Dial(t, filepath.Join(cfg.EffectiveKubeletPluginDir(), "dra.sock"))
	streamCtx, cancelStream := context.WithCancel(ctx)
	defer cancelStream()
	stream, err := drahealthv1.NewDRAResourceHealthClient(conn).NodeWatchResources(streamCtx, &drahealthv1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatalf("NodeWatchResources: %v", err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatalf("receive the first health report: %v", err)
	}
	var got []string
	for _, d := range resp.Devices {
		got = append(got, d.Device.PoolName+"/"+d.Device.DeviceName+" "+d.Health.String()+" "+d.Message)
	}
	want := []string{
		testNode + "/gpu-0 HEALTHY ",
		testNode + "/gpu-1 HEALTHY clocks slowed down: hw-thermal-slowdown",
		testNode + "/gpu-3 HEALTHY ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first health report (-want +got):\n%s", diff)
	}
	if resp.Devices[0].HealthCheckTimeoutSeconds != 30 {
		t.Errorf("health check timeout %d s, want 30", resp.Devices[0].HealthCheckTimeoutSeconds)
	}

	// Xid 48 on gpu-3, NVML's recovery action GPU reset.
	faults.set(gpu3, gpuFaults{Recovery: nvml.GPU_RECOVERY_ACTION_GPU_RESET, RecoveryKnown: true, DoubleBitECC: 1})
	faults.events <- faultEvent{UUID: gpu3, Type: nvml.EventTypeXidCriticalError, Data: 48, GI: noInstance, CI: noInstance}
	waitPublished(t, ctx, client, []string{"gpu-0", "gpu-1 gpu.drakit.dev/slowdown=hw-thermal-slowdown:None",
		"gpu-3 gpu.drakit.dev/xid=48:NoExecute,gpu.drakit.dev/recovery-action=gpu-reset:NoExecute,gpu.drakit.dev/memory=double-bit-ecc:NoSchedule"})
	for {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("receive a health report: %v", err)
		}
		if d := resp.Devices[2]; d.Health == drahealthv1.HealthStatus_UNHEALTHY {
			if !strings.HasPrefix(d.Message, "Xid 48 (Double Bit ECC Error): reset the GPU") {
				t.Errorf("gpu-3's message %q, want it to start with the Xid", d.Message)
			}
			break
		}
	}

	// gpu-1 falls off the bus: withdrawn, and prepare refuses it.
	faults.set(gpu1, gpuFaults{Lost: true})
	faults.events <- faultEvent{UUID: gpu1, Type: nvml.EventTypeXidCriticalError, Data: 79, GI: noInstance, CI: noInstance}
	waitPublished(t, ctx, client, []string{"gpu-0",
		"gpu-3 gpu.drakit.dev/xid=48:NoExecute,gpu.drakit.dev/recovery-action=gpu-reset:NoExecute,gpu.drakit.dev/memory=double-bit-ecc:NoSchedule"})
	// Each update republishes the pool with a bumped generation (the
	// ResourceSlice controller alone would keep it for an update of one
	// slice).
	if g := poolGeneration(t, ctx, client); g <= generation {
		t.Errorf("pool generation %d after the updates, want it bumped above %d", g, generation)
	}
	dra := drapbv1.NewDRAPluginClient(conn)
	pbClaim := &drapbv1.Claim{Namespace: "test", Name: "one", Uid: uidA}
	prep, err := dra.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: []*drapbv1.Claim{pbClaim}})
	if err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	if r := prep.Claims[uidA]; r == nil || !strings.Contains(r.Error, "device gpu-1: the driver withdrew this device") {
		t.Errorf("prepare of the lost GPU: %v, want the withdrawn error", prep.Claims[uidA])
	}

	// Both GPUs reset: everything back, untainted (the next poll reads
	// it; no event comes).
	faults.set(gpu1, gpuFaults{})
	faults.set(gpu3, gpuFaults{RecoveryKnown: true})
	waitPublished(t, ctx, client, []string{"gpu-0", "gpu-1", "gpu-3"})
	if err := stop(); err != nil {
		t.Errorf("run after cancel: %v", err)
	}
	if !faults.closed {
		t.Error("the fault source was not closed when run returned")
	}
}
