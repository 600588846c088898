package cluster

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/render"
)

// TestMIGManagerGrantsOnlyTheMIGCapabilities checks the MIG manager runtime's
// base spec: containerd's default deny-all rule stays first, and the only
// rules added allow reading the emulator's two MIG management capability
// devices.
func TestMIGManagerGrantsOnlyTheMIGCapabilities(t *testing.T) {
	if nvidiaCapsMajor != render.NvidiaCapsMajor {
		t.Fatalf("nvidiaCapsMajor %d, the emulator's nvidia-caps major is %d", nvidiaCapsMajor, render.NvidiaCapsMajor)
	}
	base := `{"ociVersion":"1.2.0","process":{"cwd":"/"},"linux":{"resources":{"devices":[{"allow":false,"access":"rwm"}]},"namespaces":[{"type":"pid"}]}}`
	b, err := addDeviceRules([]byte(base), migManagerDevices)
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Process map[string]any `json:"process"`
		Linux   struct {
			Resources struct {
				Devices []map[string]any `json:"devices"`
			} `json:"resources"`
			Namespaces []map[string]any `json:"namespaces"`
		} `json:"linux"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"allow": false, "access": "rwm"},
		{"allow": true, "type": "c", "major": float64(235), "minor": float64(1), "access": "r"},
		{"allow": true, "type": "c", "major": float64(235), "minor": float64(2), "access": "r"},
	}
	if diff := cmp.Diff(want, spec.Linux.Resources.Devices); diff != "" {
		t.Errorf("device rules (-want +got):\n%s", diff)
	}
	if spec.Process["cwd"] != "/" || len(spec.Linux.Namespaces) != 1 {
		t.Errorf("the rest of the spec changed: %s", b)
	}
	if _, err := addDeviceRules([]byte(`{"process":{}}`), migManagerDevices); err == nil {
		t.Error("a spec without a linux section was accepted")
	}

	cfg := DefaultConfig()
	cfg.RunDir = "/r"
	conf := containerdConfig(cfg, "drakit.dev/pause:dev")
	for _, line := range []string{
		"[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.drakit-mig-manager]",
		`base_runtime_spec = "/r/containerd/base-spec-drakit-mig-manager.json"`,
	} {
		if !strings.Contains(conf, line) {
			t.Errorf("containerd config lacks %s:\n%s", line, conf)
		}
	}
}
