package driver

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"drakit.dev/drakit/emulator/fault"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// TestEmulatedFaults runs the driver (Run's real NVML fault source) on a
// rendered dgx-h100 root and injects faults the way `drakit emulator
// fault` does: the published taints and withdrawn GPUs follow the NVML
// state, a reset clears them, and a restarted driver publishes the
// state-derived taints at once.
func TestEmulatedFaults(t *testing.T) {
	root := renderProfile(t, builtinProfile(t, "dgx-h100"))
	t.Setenv(nvmltest.RootEnv, root)
	disc, lib, err := NewNVMLDiscoverer(root, filepath.Join(root, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	faults := func(gpus []GPU) (faultSource, error) {
		var uuids []string
		for _, g := range gpus {
			uuids = append(uuids, g.UUID)
		}
		return openNVMLFaults(disc.NVML, uuids)
	}
	testRoot := &testRoot{dir: root, lib: lib}
	cfg := runConfig(t, testRoot)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
	client := harnesstest.NewFakeClient(node)
	start := func() func() error {
		stop, errc := harnesstest.StartRun(t, t.Context(), func(ctx context.Context) error {
			return run(ctx, cfg, client, disc, lib, nil, faults)
		})
		harnesstest.WaitForSlices(t, t.Context(), client, errc, 20*time.Millisecond)
		return stop
	}
	stop := start()
	ctx := t.Context()
	pool := func(devs map[int]string, lost ...int) []string {
		gone := map[int]bool{}
		for _, m := range lost {
			gone[m] = true
		}
		var out []string
		for m := range 8 {
			if !gone[m] {
				out = append(out, strings.TrimSpace("gpu-"+strconv.Itoa(m)+" "+devs[m]))
			}
		}
		return out
	}
	inject := func(minor int, code uint64) {
		t.Helper()
		if _, err := fault.InjectXid(root, strconv.Itoa(minor), fault.XidRequest{Code: code}); err != nil {
			t.Fatalf("inject Xid %d on GPU %d: %v", code, minor, err)
		}
	}
	waitPublished(t, ctx, client, pool(nil))

	inject(0, 48)
	inject(1, 31) // application: nothing
	if err := fault.Lose(root, "2"); err != nil {
		t.Fatal(err)
	}
	if err := fault.SetThrottle(root, "3", fault.Throttle{Reasons: nvml.ClocksThrottleReasonHwSlowdown}); err != nil {
		t.Fatal(err)
	}
	inject(4, 74)
	want := pool(map[int]string{
		0: "gpu.drakit.dev/xid=48:NoExecute,gpu.drakit.dev/recovery-action=gpu-reset:NoExecute,gpu.drakit.dev/memory=double-bit-ecc:NoSchedule",
		3: "gpu.drakit.dev/slowdown=hw-slowdown:None",
		4: "gpu.drakit.dev/xid=74:NoSchedule,gpu.drakit.dev/recovery-action=drain-p2p:NoSchedule",
	}, 2)
	waitPublished(t, ctx, client, want)

	// A restarted driver: the state-derived taints at once, not the Xids'.
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stop = start()
	waitPublished(t, ctx, client, pool(map[int]string{
		0: "gpu.drakit.dev/recovery-action=gpu-reset:NoExecute,gpu.drakit.dev/memory=double-bit-ecc:NoSchedule",
		3: "gpu.drakit.dev/slowdown=hw-slowdown:None",
		4: "gpu.drakit.dev/recovery-action=drain-p2p:NoSchedule",
	}, 2))

	for _, m := range []int{0, 3, 4} {
		if err := fault.Reset(root, strconv.Itoa(m)); err != nil {
			t.Fatalf("reset GPU %d: %v", m, err)
		}
	}
	if err := fault.Reset(root, "2"); err != nil {
		t.Fatalf("reset GPU 2: %v", err)
	}
	// GPU 2 was lost when this driver started: left out until a restart.
	waitPublished(t, ctx, client, pool(nil, 2))
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// TestEmulatedMIGFault injects an Xid on one static MIG device of a
// rendered mixed-mig root: that MIG device alone gets the Xid's taint, the
// GPU-wide recovery action taints all MIG devices of its GPU, and a reset
// clears both.
func TestEmulatedMIGFault(t *testing.T) {
	root := renderProfile(t, builtinProfile(t, "mixed-mig"))
	t.Setenv(nvmltest.RootEnv, root)
	disc, lib, err := NewNVMLDiscoverer(root, filepath.Join(root, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := disc.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var parent *GPU
	for i := range inv.GPUs {
		if g := &inv.GPUs[i]; g.MIG != nil && len(g.MIG.Instances) > 1 {
			parent = g
			break
		}
	}
	if parent == nil {
		t.Fatal("mixed-mig has no GPU with two MIG devices")
	}
	hit := &parent.MIG.Instances[0]
	faults := func(gpus []GPU) (faultSource, error) {
		var uuids []string
		for _, g := range gpus {
			uuids = append(uuids, g.UUID)
		}
		return openNVMLFaults(disc.NVML, uuids)
	}
	cfg := runConfig(t, &testRoot{dir: root, lib: lib})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
	client := harnesstest.NewFakeClient(node)
	stop, errc := harnesstest.StartRun(t, t.Context(), func(ctx context.Context) error {
		return run(ctx, cfg, client, disc, lib, nil, faults)
	})
	ctx := t.Context()
	harnesstest.WaitForSlices(t, ctx, client, errc, 20*time.Millisecond)
	clean := publishedTaints(t, ctx, client)
	// The parent's MIG devices, by name: what the Xid should taint.
	want := func(xid bool) []string {
		var out []string
		for _, d := range clean {
			name := strings.Fields(d)[0]
			for i := range parent.MIG.Instances {
				if name != staticMIGName(parent, &parent.MIG.Instances[i]) {
					continue
				}
				taints := "gpu.drakit.dev/recovery-action=drain-and-reset:NoSchedule"
				if xid && i == 0 {
					taints = "gpu.drakit.dev/xid=94:NoSchedule," + taints
				}
				d = name + " " + taints
			}
			out = append(out, d)
		}
		return out
	}
	if slices.Equal(want(true), clean) {
		t.Fatalf("the published pool %v has none of the MIG devices of %s", clean, parent.UUID)
	}
	if _, err := fault.InjectXid(root, hit.UUID, fault.XidRequest{Code: 94}); err != nil {
		t.Fatal(err)
	}
	waitPublished(t, ctx, client, want(true))
	if err := fault.Reset(root, parent.UUID); err != nil {
		t.Fatal(err)
	}
	waitPublished(t, ctx, client, clean)
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
}
