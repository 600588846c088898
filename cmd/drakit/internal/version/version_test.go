package version

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
)

// TestVersion: the stamped version wins, the Go and Kubernetes versions are
// there, -o json and -o yaml decode to the same, another -o is refused.
func TestVersion(t *testing.T) {
	v := currentVersion("v0.3.0-5-gabcdef-dirty")
	if v.Drakit != "v0.3.0-5-gabcdef-dirty" || v.Kubernetes != "v1.37.2" || !strings.HasPrefix(v.Go, "go") {
		t.Errorf("version %+v", v)
	}
	if unstamped := currentVersion(""); unstamped.Drakit == "" {
		t.Error("an unstamped build has no version")
	}
	var lines, js, ym bytes.Buffer
	if err := v.print(&lines, ""); err != nil || !strings.Contains(lines.String(), "drakit v0.3.0-5-gabcdef-dirty\n") || !strings.Contains(lines.String(), "Kubernetes v1.37.2") {
		t.Errorf("lines %q, %v", lines.String(), err)
	}
	var fromJSON, fromYAML versionInfo
	if err := v.print(&js, "json"); err != nil || json.Unmarshal(js.Bytes(), &fromJSON) != nil || fromJSON != v {
		t.Errorf("json %q (%v) decodes to %+v, want %+v", js.String(), err, fromJSON, v)
	}
	if err := v.print(&ym, "yaml"); err != nil || yaml.UnmarshalStrict(ym.Bytes(), &fromYAML) != nil || fromYAML != v {
		t.Errorf("yaml %q (%v) decodes to %+v, want %+v", ym.String(), err, fromYAML, v)
	}
	if _, err := clitest.Run(t, NewCommand(""), "version", "-o", "xml"); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("version -o xml: %v, want refused", err)
	}
	if out, err := clitest.Run(t, NewCommand(""), "version"); err != nil || !strings.Contains(out, "Kubernetes v1.37.2") {
		t.Errorf("drakit version: %q, %v", out, err)
	}
}
