package tpudriver

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// TestControllerPublishes runs the controller against a fake clientset
// holding the four node pools of torus-a: it creates the sub-slice pool,
// a counter slice and a device slice, both with per-device node selection.
func TestControllerPublishes(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	client := harnesstest.NewFakeClient(nodePools(t)...)
	cfg := DefaultControllerConfig()
	cfg.Interval = 50 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- runController(ctx, cfg, client) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var counters, devices int
		for _, s := range list.Items {
			if s.Spec.Pool.Name != "slice-torus-a" {
				continue
			}
			if s.Spec.PerDeviceNodeSelection == nil || !*s.Spec.PerDeviceNodeSelection || s.Spec.NodeName != nil {
				t.Errorf("slice %s: perDeviceNodeSelection %v nodeName %v", s.Name, s.Spec.PerDeviceNodeSelection, s.Spec.NodeName)
			}
			counters += len(s.Spec.SharedCounters)
			devices += len(s.Spec.Devices)
			if s.Spec.Pool.ResourceSliceCount != 2 {
				t.Errorf("slice %s: resourceSliceCount %d, want 2", s.Name, s.Spec.Pool.ResourceSliceCount)
			}
		}
		if counters == 1 && devices == 5 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20s: %d counter sets and %d devices in pool slice-torus-a, want 1 and 5", counters, devices)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
