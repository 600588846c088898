package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Skip reasons of the kit's kinds.
const (
	unclaimedReason = "capability partitionableDevices (KEP-4815) unclaimed: the driver does not say that it has partitions"
	notDeclared     = NotDeclaredPrefix + "the declaration names no memory capacity"
	ineligible      = NotEligiblePrefix + "needs the feature gate DRADeviceTaints"
	noAccess        = "the kit cannot see the node's file system: no node CDI directory configured"
)

// lines numbers the scenarios sc makes, so that each has a location of
// its own.
var lines atomic.Int64

// sc is a scenario of KEP kep (a profile's) with level and status; a
// skipped one gets msg as its reason, a failed one as its error.
func sc(kep int, lvl string, status Status, msg string, extra ...string) ScenarioResult {
	line := int(lines.Add(1))
	return ScenarioResult{URI: fmt.Sprintf("kep-%d-x/a.feature", kep), Line: line, Name: fmt.Sprintf("%s %s %s", lvl, status, msg),
		Tags: append([]string{fmt.Sprintf("@kep-%d", kep), "@" + lvl}, extra...), Status: status, Message: msg}
}

func kitFailed(s ScenarioResult) ScenarioResult {
	s.KitFailure = true
	return s
}

func claimed(s ScenarioResult, capability string) ScenarioResult {
	s.Claimed = []string{capability}
	return s
}

// TestJudge walks every verdict path of Judge, of the profile and of the
// run.
func TestJudge(t *testing.T) {
	t.Parallel()
	pass := sc(4381, "core", StatusPassed, "")
	cc := func(s ScenarioResult) ScenarioResult { s.Tags = append(s.Tags, ClusterCheckTag); return s }
	tests := map[string]struct {
		scenarios []ScenarioResult
		skipsFail bool
		profiles  map[string]Outcome
		want      Outcome
		reason    string // in a finding or could-not-certify reason
	}{
		"all passed": {scenarios: []ScenarioResult{pass, sc(4381, "extended", StatusPassed, "")},
			profiles: map[string]Outcome{"core": Conformant}, want: Conformant},
		"core failed": {scenarios: []ScenarioResult{pass, sc(4381, "core", StatusFailed, "the container sees GPU-1")},
			profiles: map[string]Outcome{"core": NotConformant}, want: NotConformant, reason: "the container sees GPU-1"},
		"extended failed": {scenarios: []ScenarioResult{pass, sc(4381, "extended", StatusFailed, "leaked")},
			profiles: map[string]Outcome{"core": NotConformant}, want: NotConformant, reason: "leaked"},
		"core skipped for want of access": {scenarios: []ScenarioResult{pass, sc(4381, "core", StatusSkipped, noAccess)},
			profiles: map[string]Outcome{"core": CouldNotCertify}, want: CouldNotCertify, reason: "a Core scenario could not run: " + noAccess},
		"core skipped for want of access, with fail-on-skip": {scenarios: []ScenarioResult{pass, sc(4381, "core", StatusSkipped, noAccess)}, skipsFail: true,
			profiles: map[string]Outcome{"core": CouldNotCertify}, want: CouldNotCertify, reason: noAccess},
		"core skipped as unclaimed": {scenarios: []ScenarioResult{pass, sc(4381, "core", StatusSkipped, unclaimedReason)},
			profiles: map[string]Outcome{"core": Conformant}, want: Conformant},
		"core skipped as not declared": {scenarios: []ScenarioResult{pass, sc(4381, "core", StatusSkipped, notDeclared)}, skipsFail: true,
			profiles: map[string]Outcome{"core": Conformant}, want: Conformant},
		"core not eligible": {scenarios: []ScenarioResult{pass, sc(4381, "core", StatusSkipped, ineligible)}, skipsFail: true,
			profiles: map[string]Outcome{"core": Conformant}, want: Conformant},
		"extended skipped by the kit": {scenarios: []ScenarioResult{pass, sc(4381, "extended", StatusSkipped, noAccess)},
			profiles: map[string]Outcome{"core": Conformant}, want: Conformant},
		"extended skipped by the kit, with fail-on-skip": {scenarios: []ScenarioResult{pass, sc(4381, "extended", StatusSkipped, noAccess)}, skipsFail: true,
			profiles: map[string]Outcome{"core": CouldNotCertify}, want: CouldNotCertify, reason: "--fail-on-skip"},
		"only extended skipped by the kit": {scenarios: []ScenarioResult{pass, sc(4815, "extended", StatusSkipped, noAccess)},
			profiles: map[string]Outcome{"core": Conformant, "partitionable": NotApplicable}, want: Conformant},
		"claimed capability unchecked": {scenarios: []ScenarioResult{pass, claimed(sc(4815, "extended", StatusSkipped, noAccess), "partitionableDevices")},
			profiles: map[string]Outcome{"core": Conformant, "partitionable": NotConformant}, want: NotConformant,
			reason: "claimed capability partitionableDevices could not be checked: " + noAccess},
		"claimed capability, cluster not eligible": {scenarios: []ScenarioResult{pass, claimed(sc(4815, "core", StatusSkipped, ineligible), "partitionableDevices")},
			profiles: map[string]Outcome{"core": Conformant, "partitionable": NotEligible}, want: Conformant},
		// A fault command that failed says nothing of the driver, even
		// under a claimed capability.
		"failed through the kit": {scenarios: []ScenarioResult{pass, kitFailed(claimed(sc(4680, "extended", StatusFailed, "fault command exited with code 2"), "deviceHealth"))},
			profiles: map[string]Outcome{"core": Conformant, "device-health": CouldNotCertify}, want: CouldNotCertify,
			reason: "the kit could not carry out a step, which says nothing of the driver: fault command exited with code 2"},
		"failed through the kit and the driver": {scenarios: []ScenarioResult{pass, kitFailed(sc(4680, "extended", StatusFailed, "fault command exited with code 2")),
			sc(4680, "core", StatusFailed, "pod p shows Unknown")},
			profiles: map[string]Outcome{"core": Conformant, "device-health": NotConformant}, want: NotConformant, reason: "pod p shows Unknown"},
		"undefined step": {scenarios: []ScenarioResult{pass, sc(4381, "extended", StatusUndefined, "")},
			profiles: map[string]Outcome{"core": CouldNotCertify}, want: CouldNotCertify, reason: "no definition"},
		"pending step": {scenarios: []ScenarioResult{pass, sc(4381, "core", StatusPending, "")},
			profiles: map[string]Outcome{"core": CouldNotCertify}, want: CouldNotCertify, reason: "pending"},
		"a finding wins over could not certify": {scenarios: []ScenarioResult{sc(4381, "core", StatusFailed, "wrong device"), sc(4815, "core", StatusSkipped, noAccess), pass},
			profiles: map[string]Outcome{"core": NotConformant, "partitionable": CouldNotCertify}, want: NotConformant, reason: "wrong device"},
		"unclaimed profile": {scenarios: []ScenarioResult{pass, sc(4815, "core", StatusSkipped, unclaimedReason), sc(4815, "extended", StatusSkipped, unclaimedReason)},
			profiles: map[string]Outcome{"core": Conformant, "partitionable": NotApplicable}, want: Conformant},
		"profile of cluster checks only": {scenarios: []ScenarioResult{pass, cc(sc(5055, "core", StatusPassed, ""))},
			profiles: map[string]Outcome{"core": Conformant, "device-taints": NotApplicable}, want: Conformant},
		"profile not eligible": {scenarios: []ScenarioResult{pass, sc(5055, "core", StatusSkipped, ineligible), cc(sc(5055, "core", StatusSkipped, ineligible))},
			profiles: map[string]Outcome{"core": Conformant, "device-taints": NotEligible}, want: Conformant},
		"a cluster check failed": {scenarios: []ScenarioResult{pass, cc(sc(4381, "core", StatusFailed, "the API server accepted a bad claim"))},
			profiles: map[string]Outcome{"core": Conformant}, want: CouldNotCertify, reason: "the API server accepted a bad claim"},
		"a cluster check skipped": {scenarios: []ScenarioResult{pass, cc(sc(4381, "core", StatusSkipped, noAccess))},
			profiles: map[string]Outcome{"core": Conformant}, want: Conformant},
		"a cluster check skipped, with fail-on-skip": {scenarios: []ScenarioResult{pass, cc(sc(4381, "core", StatusSkipped, noAccess))}, skipsFail: true,
			profiles: map[string]Outcome{"core": Conformant}, want: CouldNotCertify, reason: "--fail-on-skip"},
		"only cluster checks passed": {scenarios: []ScenarioResult{cc(sc(4381, "core", StatusPassed, ""))},
			profiles: map[string]Outcome{"core": NotApplicable}, want: CouldNotCertify, reason: "no scenario exercised the driver"},
		"nothing ran": {profiles: map[string]Outcome{}, want: CouldNotCertify, reason: "no scenario ran"},
		"a scenario of no profile failed": {scenarios: []ScenarioResult{pass, sc(1, "core", StatusFailed, "odd")},
			profiles: map[string]Outcome{"core": Conformant}, want: NotConformant, reason: "odd"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := Judge(Result{Scenarios: tc.scenarios, SkipsFail: tc.skipsFail})
			got := map[string]Outcome{}
			for _, p := range v.Profiles {
				got[p.Name] = p.Outcome
			}
			if diff := cmp.Diff(tc.profiles, got); diff != "" {
				t.Errorf("profiles (-want +got):\n%s", diff)
			}
			if v.Outcome != tc.want {
				t.Errorf("verdict %s, want %s (findings %v, could not certify %v)", v.Outcome, tc.want, v.Findings, v.CouldNotCertify)
			}
			reasons := v.Findings
			if tc.want == CouldNotCertify {
				reasons = v.CouldNotCertify
			}
			if tc.reason != "" && !strings.Contains(fmt.Sprint(reasons), tc.reason) {
				t.Errorf("reasons %v, want one containing %q", reasons, tc.reason)
			}
			if tc.want == Conformant && len(v.Findings)+len(v.CouldNotCertify) > 0 {
				t.Errorf("Conformant with reasons: %v %v", v.Findings, v.CouldNotCertify)
			}
			wantCode := map[Outcome]int{Conformant: 0, NotConformant: 1, CouldNotCertify: 3}[tc.want]
			if v.ExitCode() != wantCode {
				t.Errorf("exit code %d, want %d", v.ExitCode(), wantCode)
			}
		})
	}
}

// TestJudgeCounts: the driver's scenarios and the cluster checks are
// counted apart, and not eligible apart from skipped.
func TestJudgeCounts(t *testing.T) {
	t.Parallel()
	cc := sc(4381, "core", StatusPassed, "", ClusterCheckTag)
	v := Judge(Result{Scenarios: []ScenarioResult{
		sc(4381, "core", StatusPassed, ""), sc(4381, "core", StatusSkipped, ineligible), sc(4381, "extended", StatusSkipped, noAccess), cc,
	}})
	if want := (Checks{Passed: 1, Skipped: 1, NotEligible: 1}); v.Driver != want {
		t.Errorf("driver checks %+v, want %+v", v.Driver, want)
	}
	if want := (Checks{Passed: 1}); v.Cluster != want {
		t.Errorf("cluster checks %+v, want %+v", v.Cluster, want)
	}
	if len(v.ClusterChecks) != 1 || v.ClusterChecks[0].Name != cc.Name {
		t.Errorf("cluster checks %v, want %s", v.ClusterChecks, cc.Name)
	}
}

// TestVerdictEverywhere: the summary's last line, the report's verdict and
// profile results, and the exit code are one verdict's, for every
// outcome of a run.
func TestVerdictEverywhere(t *testing.T) {
	t.Parallel()
	pass := sc(4381, "core", StatusPassed, "")
	runs := map[string]Result{
		"conformant":        {Scenarios: []ScenarioResult{pass}},
		"not conformant":    {Scenarios: []ScenarioResult{pass, sc(4381, "core", StatusFailed, "wrong device"), sc(4381, "extended", StatusFailed, "leak")}},
		"could not certify": {Scenarios: []ScenarioResult{pass, sc(4381, "core", StatusSkipped, noAccess)}},
	}
	for name, res := range runs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := Judge(res)
			var summary, rep bytes.Buffer
			if err := WriteSummary(&summary, SummaryHeader{Reports: []string{"r"}}, res, v); err != nil {
				t.Fatal(err)
			}
			if err := WriteConformanceReport(&rep, fixtureInput(), res, v); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(summary.String()), "\n")
			if last := lines[len(lines)-1]; last != v.Line() {
				t.Errorf("summary ends with %q, want %q", last, v.Line())
			}
			doc := readReport(t, rep.Bytes())
			verdict := doc["verdict"].(map[string]any)
			if verdict["result"] != string(v.Outcome) {
				t.Errorf("report verdict %v, want %s", verdict["result"], v.Outcome)
			}
			if got := len(asList(verdict["findings"])); got != len(v.Findings) {
				t.Errorf("report has %d findings, the verdict %d", got, len(v.Findings))
			}
			if got := len(asList(verdict["couldNotCertify"])); got != len(v.CouldNotCertify) {
				t.Errorf("report has %d could-not-certify reasons, the verdict %d", got, len(v.CouldNotCertify))
			}
			if diff := cmp.Diff(map[string]string{"core": string(v.Profiles[0].Outcome)}, profileResults(t, doc)); diff != "" {
				t.Errorf("profile results (-want +got):\n%s", diff)
			}
			want := map[string]string{"conformant": "verdict: Conformant", "not conformant": "verdict: Not conformant (2 findings)",
				"could not certify": "verdict: Could not certify (1 reason)"}[name]
			if v.Line() != want {
				t.Errorf("line %q, want %q", v.Line(), want)
			}
			wantCode := map[string]int{"conformant": 0, "not conformant": 1, "could not certify": 3}[name]
			if v.ExitCode() != wantCode {
				t.Errorf("exit code %d, want %d", v.ExitCode(), wantCode)
			}
		})
	}
}

// TestReportResultFollowsName: scripts read a profile's result as the line
// "  result: <outcome>" right after "  name: <profile>".
func TestReportResultFollowsName(t *testing.T) {
	t.Parallel()
	res := Result{Scenarios: []ScenarioResult{sc(4381, "core", StatusFailed, "x"), claimed(sc(4815, "core", StatusSkipped, noAccess), "partitionableDevices"),
		sc(5055, "core", StatusPassed, "", ClusterCheckTag)}}
	var b bytes.Buffer
	if err := WriteConformanceReport(&b, fixtureInput(), res, Judge(res)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	found := map[string]string{}
	for i, l := range lines {
		if name, ok := strings.CutPrefix(l, "  name: "); ok && i+1 < len(lines) && slices.Contains(ProfileNames(), name) {
			found[name] = lines[i+1]
		}
	}
	want := map[string]string{"core": "  result: not-conformant", "partitionable": "  result: not-conformant", "device-taints": "  result: not-applicable"}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("name and result lines (-want +got):\n%s\n%s", diff, b.String())
	}
}

// TestCombinedLineOfOneRun: summarize's verdict of one run is the run's.
func TestCombinedLineOfOneRun(t *testing.T) {
	t.Parallel()
	for _, res := range []Result{
		{Scenarios: []ScenarioResult{sc(4381, "core", StatusPassed, "")}},
		{Scenarios: []ScenarioResult{sc(4381, "core", StatusFailed, "x")}},
		{Scenarios: []ScenarioResult{sc(4381, "core", StatusPassed, ""), sc(4381, "core", StatusSkipped, noAccess)}},
	} {
		v, c := Judge(res), JudgeRuns([]Run{{Name: "a", Result: res}})
		if c.Line() != v.Line() || c.ExitCode() != v.ExitCode() {
			t.Errorf("combined %q (exit %d), run %q (exit %d)", c.Line(), c.ExitCode(), v.Line(), v.ExitCode())
		}
	}
	c := JudgeRuns([]Run{
		{Name: "a", Result: Result{Scenarios: []ScenarioResult{sc(4381, "core", StatusPassed, ""), sc(4381, "core", StatusSkipped, noAccess)}}},
		{Name: "b", Result: Result{Scenarios: []ScenarioResult{sc(4381, "core", StatusFailed, "x")}}},
	})
	if c.Outcome != NotConformant || c.Line() != "verdict: Not conformant (1 finding)" {
		t.Errorf("combined %s %q, want Not conformant with the one finding", c.Outcome, c.Line())
	}
}

// TestWarningsNeverJudged: a scenario's warnings are listed in the
// summary and the report, and change neither its verdict nor the run's.
func TestWarningsNeverJudged(t *testing.T) {
	t.Parallel()
	const advice = "rule node-selection (no KEP or API basis, a warning: a convention): not owned by its Node"
	warned := sc(4381, "core", StatusPassed, "")
	warned.Warnings = []string{advice}
	for name, res := range map[string]Result{
		"passed":  {Scenarios: []ScenarioResult{warned}},
		"failing": {Scenarios: []ScenarioResult{warned, sc(4381, "core", StatusFailed, "rule node-selection (KEP-4381: …): names no Node")}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bare := Result{Scenarios: slices.Clone(res.Scenarios)}
			bare.Scenarios[0].Warnings = nil
			v, without := Judge(res), Judge(bare)
			if v.Outcome != without.Outcome || len(v.Findings) != len(without.Findings) || len(v.CouldNotCertify) != len(without.CouldNotCertify) {
				t.Errorf("with a warning %s %q, without %s %q", v.Outcome, v.Line(), without.Outcome, without.Line())
			}
			if len(v.Warnings) != 1 || v.Warnings[0].Message != advice || v.Warnings[0].Location != location(warned) {
				t.Errorf("warnings %+v, want %q at %s", v.Warnings, advice, location(warned))
			}
			var summary, rep bytes.Buffer
			if err := WriteSummary(&summary, SummaryHeader{}, res, v); err != nil {
				t.Fatal(err)
			}
			if want := "\nWarnings (not counted in the verdict):\n  " + location(warned) + "  " + warned.Name + "\n    warning: " + advice + "\n"; !strings.Contains(summary.String(), want) {
				t.Errorf("summary lacks %q:\n%s", want, summary.String())
			}
			if err := WriteConformanceReport(&rep, fixtureInput(), res, v); err != nil {
				t.Fatal(err)
			}
			warnings := asList(readReport(t, rep.Bytes())["warnings"])
			if len(warnings) != 1 || warnings[0].(map[string]any)["message"] != advice {
				t.Errorf("report warnings %v, want %q", warnings, advice)
			}
		})
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
