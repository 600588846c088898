package faults

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
)

func TestCheckEvictionTime(t *testing.T) {
	t.Parallel()
	added := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		after time.Duration
		want  string
	}{
		{19 * time.Second, "before its toleration of 20s ended"},
		{20 * time.Second, ""},
		{25 * time.Second, ""},
		{26 * time.Second, "more than 5s after its toleration of 20s ended"},
	} {
		got := strings.Join(checkEvictionTime("victim", added, 20*time.Second, added.Add(tc.after)), "; ")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("evicted %v after the taint: %q, want %q", tc.after, got, tc.want)
		}
	}
}

func TestCheckEviction(t *testing.T) {
	t.Parallel()
	good := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: evictionReason, Message: evictionMessage}
	if got := checkEviction("p", eviction{condition: good, deleted: true}); len(got) != 0 {
		t.Errorf("a proper eviction: %v", got)
	}
	for _, tc := range []struct {
		ev   eviction
		want string
	}{
		{eviction{deleted: true}, "deleted without a DisruptionTarget condition"},
		{eviction{condition: &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"}, deleted: true}, `with reason "EvictionByEvictionAPI"`},
		{eviction{condition: good}, "pod p was not deleted"},
	} {
		if got := strings.Join(checkEviction("p", tc.ev), "; "); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.ev, got, tc.want)
		}
	}
}

func TestSelectedCount(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]int{
		"1 published device selected. 0 allocated devices selected. 0 pods would be evicted in 0 different namespaces if the effect was NoExecute.": 1,
		"84 published devices selected. 2 allocated devices selected.":                                                                              84,
	} {
		if n, ok := selectedCount(msg); !ok || n != want {
			t.Errorf("%q: %d %t, want %d", msg, n, ok, want)
		}
	}
	if _, ok := selectedCount("Eviction only happens for the NoExecute effect."); ok {
		t.Error("a message without a count gave one")
	}
}

func TestCountPublishedDevices(t *testing.T) {
	t.Parallel()
	slice := func(driver, pool string, gen int64, devices ...string) resourceapi.ResourceSlice {
		s := resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: driver, Pool: resourceapi.ResourcePool{Name: pool, Generation: gen}}}
		for _, d := range devices {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: d})
		}
		return s
	}
	got := countPublishedDevices([]resourceapi.ResourceSlice{
		slice("a", "n1", 1, "old-0", "old-1"), slice("a", "n1", 2, "gpu-0"), slice("a", "n1", 2, "gpu-1"),
		slice("b", "n1", 1, "vf-0"), // another driver's pool of the same name
	})
	if got != 3 {
		t.Errorf("counted %d devices, want 3 (the newest generation of each pool)", got)
	}
}

func TestCheckResultTolerations(t *testing.T) {
	t.Parallel()
	tol, err := parseToleration("drakit.dev/broken", "Exists", "NoExecute", "20")
	if err != nil || tol.Key != "drakit.dev/broken" || tol.Value != "" || *tol.TolerationSeconds != 20 {
		t.Fatalf("parseToleration: %+v %v", tol, err)
	}
	c := kit.NewClaim("c", kit.WithTolerations(kit.ClaimSpec("gpu.example.com", 1), tol))
	result := resourceapi.DeviceRequestAllocationResult{Request: kit.RequestName, Pool: "n1", Device: "gpu-0"}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{result}}}
	if got := strings.Join(checkResultTolerations(c), "; "); !strings.Contains(got, "holds tolerations none, expected the request's") {
		t.Errorf("a result without the toleration: %q", got)
	}
	c.Status.Allocation.Devices.Results[0].Tolerations = []resourceapi.DeviceToleration{tol}
	if got := checkResultTolerations(c); len(got) != 0 {
		t.Errorf("a result with the toleration: %v", got)
	}
	other := tol
	other.TolerationSeconds = ptr.To[int64](30)
	c.Status.Allocation.Devices.Results[0].Tolerations = []resourceapi.DeviceToleration{other}
	if got := strings.Join(checkResultTolerations(c), "; "); !strings.Contains(got, "tolerationSeconds 30") {
		t.Errorf("a result with another tolerationSeconds: %q", got)
	}
}

func TestParseTaint(t *testing.T) {
	t.Parallel()
	if got := parseTaint("drakit.dev/maintenance=planned", "NoSchedule"); got.Key != "drakit.dev/maintenance" || got.Value != "planned" || got.Effect != resourceapi.DeviceTaintEffectNoSchedule {
		t.Errorf("key=value: %+v", got)
	}
	if got := parseTaint("drakit.dev/notice", "None"); got.Value != "" || got.Effect != resourceapi.DeviceTaintEffectNone {
		t.Errorf("key alone: %+v", got)
	}
}
