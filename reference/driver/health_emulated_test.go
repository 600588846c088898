package driver

import (
	"path/filepath"
	"testing"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
)

// TestEmulatedHealthWithoutFaults runs the health watcher's NVML fault
// source over the emulator's shim on a rendered mixed-mig root: every
// GPU's events register, its fault state reads as healthy (what the shim
// does not support is no information, not a fault), and a wait with no
// event times out without error.
func TestEmulatedHealthWithoutFaults(t *testing.T) {
	root := renderProfile(t, builtinProfile(t, "mixed-mig"))
	t.Setenv(nvmltest.RootEnv, root)
	disc, _, err := NewNVMLDiscoverer(root, filepath.Join(root, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := disc.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var uuids []string
	for _, g := range inv.GPUs {
		uuids = append(uuids, g.UUID)
	}
	src, err := openNVMLFaults(disc.NVML, uuids)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := src.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	if len(src.registered) != len(uuids) {
		t.Errorf("events registered on %d of %d GPUs", len(src.registered), len(uuids))
	}
	for _, uuid := range uuids {
		f, err := src.Faults(uuid)
		if err != nil {
			t.Errorf("GPU %s: %v", uuid, err)
		}
		if st := evaluate(testDriver, f, nil); st.Health != kubeletplugin.HealthStatusHealthy || len(st.Taints) > 0 || st.Withdrawn {
			t.Errorf("GPU %s: fault state %+v gives %+v, want healthy", uuid, f, st)
		}
	}
	start := time.Now()
	if ev, ok, err := src.Wait(t.Context(), 100*time.Millisecond); ok || err != nil {
		t.Errorf("Wait: %+v %v %v, want a timeout", ev, ok, err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("Wait returned after %v, before its timeout", d)
	}
}
