package cluster

import (
	"context"
	"syscall"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

// TestDownAfterComponentCrash kills each component with SIGKILL while a pod
// runs, and checks that Down still removes everything (processes, mounts,
// cgroups, host paths, the run dir) and that the next Up works: the up after
// one crash is the start of the next round, and a last round checks the up
// after the kubelet's crash.
func TestDownAfterComponentCrash(t *testing.T) {
	cfg := e2eConfig(t)
	skipUnlessClusterCanRun(t, cfg)
	cfg.PodDeleteTimeout = 10 * time.Second
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 12*time.Minute)
	defer cancel()
	before := snapshotHost(t, cfg)
	t.Cleanup(func() {
		if err := Down(context.Background(), cfg); err != nil {
			t.Errorf("cleanup Down: %v", err)
		}
	})
	sleepImage := buildSleepImage(ctx, t)

	for _, victim := range []string{Etcd, APIServer, Scheduler, ControllerManager, Containerd, Kubelet} {
		t0 := time.Now()
		if err := Up(ctx, cfg); err != nil {
			t.Fatalf("Up before killing %s: %v", victim, err)
		}
		if err := ImportImage(ctx, cfg, sleepImage); err != nil {
			t.Fatal(err)
		}
		runPod(ctx, t, cfg)
		components := readPIDFiles(t, cfg)
		recorded := recordClusterProcesses(t, cfg, components)

		ref := components[victim]
		if err := syscall.Kill(ref.PID, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s (pid %d): %v", victim, ref.PID, err)
		}
		if !waitGone(ctx, ref, 10*time.Second) {
			t.Fatalf("%s (pid %d) survived SIGKILL", victim, ref.PID)
		}
		if err := Down(ctx, cfg); err != nil {
			t.Fatalf("Down after killing %s: %v", victim, err)
		}
		assertNothingLeft(t, cfg, before, recorded)
		if t.Failed() {
			t.Fatalf("Down after killing %s left the above behind", victim)
		}
		t.Logf("killed %s: up, pod, down in %v", victim, time.Since(t0).Round(time.Millisecond))
	}

	if err := Up(ctx, cfg); err != nil {
		t.Fatalf("Up after the last crash: %v", err)
	}
	if st, err := Status(ctx, cfg); err != nil || !st.Up {
		t.Fatalf("Status after the last crash's Up: %+v, %v", st, err)
	}
	if err := Down(ctx, cfg); err != nil {
		t.Fatalf("final Down: %v", err)
	}
	assertNothingLeft(t, cfg, before, nil)
}
