package kit

import (
	"slices"
	"strings"
	"testing"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/report"
)

// TestDeviceHealthOnFakeNode runs the KEP-4680 features on the fake node,
// whose kubelet shows every allocated device Healthy and which runs no
// driver pods: the Core scenario of a running pod passes, the one that
// stops the driver cannot (a claimed capability left unchecked, a
// finding), and the fault scenarios, whose fault command fails, fail as
// the kit's: Could not certify, each naming the command, its exit code and
// its standard error, never a finding.
func TestDeviceHealthOnFakeNode(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Tags = "@kep-4680"
	noDriverPods(cfg)
	wholeKind(cfg).FaultCommand = &declaration.FaultCommand{
		Inject: []string{"sh", "-c", `echo "cannot break $0 with $1" >&2; exit 3`, "{identity}", "{fault}"},
		Reset:  []string{"true", "{identity}"},
	}
	res, out := runOnFakeNode(t, cfg)
	faults := 0
	for _, sr := range res.Scenarios {
		switch {
		case slices.Contains(sr.Tags, "@hardware-faults"):
			faults++
			if sr.Status != report.StatusFailed || !sr.KitFailure || !strings.Contains(sr.Message, `run fault command sh -c 'echo "cannot break $0 with $1" >&2; exit 3' GPU-`) ||
				!strings.Contains(sr.Message, "exit code 3; stderr: cannot break GPU-") {
				t.Errorf("%s:%d %q: %s (kit failure %v): %s; want failed through the kit", sr.URI, sr.Line, sr.Name, sr.Status, sr.KitFailure, sr.Message)
			}
		case strings.Contains(sr.Name, "driver stops"):
			if sr.Status != report.StatusSkipped || sr.Message != RestartSkipReason {
				t.Errorf("%s:%d %q: %s: %s; want skipped: %s", sr.URI, sr.Line, sr.Name, sr.Status, sr.Message, RestartSkipReason)
			}
		default:
			if sr.Status != report.StatusPassed {
				t.Errorf("%s:%d %q: %s: %s", sr.URI, sr.Line, sr.Name, sr.Status, sr.Message)
			}
		}
	}
	if faults != 3 {
		t.Errorf("%d fault scenarios ran, want 3", faults)
	}
	v := report.Judge(res)
	if len(v.Findings) != 1 || !strings.Contains(v.Findings[0].Message, "claimed capability deviceHealth could not be checked") {
		t.Errorf("findings %+v, want only the driver stop left unchecked", v.Findings)
	}
	kit := 0
	for _, r := range v.CouldNotCertify {
		if strings.HasPrefix(r.Message, "the kit could not carry out a step") {
			kit++
		}
	}
	if kit != 3 {
		t.Errorf("could not certify %+v, want the 3 fault scenarios", v.CouldNotCertify)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}
