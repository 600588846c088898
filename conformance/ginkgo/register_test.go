package ginkgo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
	"github.com/google/go-cmp/cmp"
	gk "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

// The tests' spec tree: the embedded features, whose session is fake.
var fake = &fakeSession{}

var _ = register(features.FS, func(context.Context) (session, settings, error) {
	fake.opened++
	return fake, settings{artifacts: "/artifacts"}, nil
})

// pickle is a scenario of the feature files (an example row of an outline
// on its own), as the tests read them, with gherkin, apart from the code
// under test.
type pickle struct {
	location string // features/<dir>/<file>.feature:<line>
	name     string
	tags     []string
}

// pickles reads every scenario of the embedded features.
func pickles(t *testing.T) []pickle {
	t.Helper()
	files, err := fs.Glob(features.FS, "*/*.feature")
	if err != nil {
		t.Fatal(err)
	}
	var out []pickle
	for _, f := range files {
		data, err := features.FS.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ids := &messages.Incrementing{}
		doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(data), ids.NewId)
		if err != nil {
			t.Fatal(err)
		}
		lines := map[string]int64{}
		var walk func(children []*messages.FeatureChild)
		walk = func(children []*messages.FeatureChild) {
			for _, c := range children {
				if c.Rule != nil {
					for _, rc := range c.Rule.Children {
						walk([]*messages.FeatureChild{{Scenario: rc.Scenario}})
					}
				}
				if c.Scenario == nil {
					continue
				}
				lines[c.Scenario.Id] = c.Scenario.Location.Line
				for _, ex := range c.Scenario.Examples {
					for _, row := range ex.TableBody {
						lines[row.Id] = row.Location.Line
					}
				}
			}
		}
		walk(doc.Feature.Children)
		for _, p := range gherkin.Pickles(*doc, f, ids.NewId) {
			pk := pickle{location: fmt.Sprintf("features/%s:%d", f, lines[p.AstNodeIds[len(p.AstNodeIds)-1]]), name: p.Name}
			for _, tag := range p.Tags {
				pk.tags = append(pk.tags, tag.Name)
			}
			out = append(out, pk)
		}
	}
	if len(out) < 100 {
		t.Fatalf("read %d scenarios from the embedded features: too few to be all", len(out))
	}
	return out
}

// preview builds the suite's tree in a dry run with labelFilter and
// returns the locations of the kit's It specs that would run and of those
// that would not.
func preview(t *testing.T, labelFilter string) (run, filtered []string, specs map[string]types.SpecReport) {
	t.Helper()
	cfg, _ := gk.GinkgoConfiguration()
	cfg.LabelFilter = labelFilter
	rep := gk.PreviewSpecs("drakit conformance preview", cfg)
	specs = map[string]types.SpecReport{}
	for _, sr := range rep.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		loc := sr.LeafNodeLocation.String()
		if _, dup := specs[loc]; dup {
			t.Errorf("two specs at %s", loc)
		}
		specs[loc] = sr
		switch sr.State {
		case types.SpecStatePassed:
			run = append(run, loc)
		case types.SpecStateSkipped:
			filtered = append(filtered, loc)
		default:
			t.Errorf("spec %s in state %s in a dry run", loc, sr.State)
		}
	}
	sort.Strings(run)
	sort.Strings(filtered)
	return run, filtered, specs
}

// matching are the sorted locations of the pickles for which keep holds.
func matching(all []pickle, keep func(pickle) bool) []string {
	var out []string
	for _, p := range all {
		if keep(p) {
			out = append(out, p.location)
		}
	}
	sort.Strings(out)
	return out
}

func hasTag(tag string) func(pickle) bool {
	return func(p pickle) bool { return slices.Contains(p.tags, tag) }
}

// TestEveryScenarioIsAnIt: without a label filter the tree holds one It
// per scenario and example row, at its feature file line, named after it
// and its feature, with its tags, its profile and the kit's label.
func TestEveryScenarioIsAnIt(t *testing.T) {
	all := pickles(t)
	run, filtered, specs := preview(t, "")
	if len(filtered) != 0 {
		t.Errorf("%d specs filtered out without a filter", len(filtered))
	}
	if diff := cmp.Diff(matching(all, func(pickle) bool { return true }), run); diff != "" {
		t.Errorf("It specs (-scenarios of the feature files +specs):\n%s", diff)
	}
	for _, p := range all {
		sr, ok := specs[p.location]
		if !ok {
			continue
		}
		if sr.LeafNodeText != p.name && !strings.HasPrefix(sr.LeafNodeText, p.name+" (line ") {
			t.Errorf("%s: It %q, want the scenario's name %q", p.location, sr.LeafNodeText, p.name)
		}
		if len(sr.ContainerHierarchyTexts) != 2 || sr.ContainerHierarchyTexts[0] != "drakit conformance" || sr.ContainerHierarchyTexts[1] == "" {
			t.Errorf("%s: containers %q, want drakit conformance and the feature", p.location, sr.ContainerHierarchyTexts)
		}
		labels := sr.Labels()
		for _, tag := range p.tags {
			if !slices.Contains(labels, strings.TrimPrefix(tag, "@")) {
				t.Errorf("%s: labels %q lack the tag %s", p.location, labels, tag)
			}
		}
		profiles := 0
		for _, l := range labels {
			if strings.HasPrefix(l, ProfileLabelPrefix) {
				profiles++
			}
		}
		if !slices.Contains(labels, SuiteLabel) || profiles != 1 {
			t.Errorf("%s: labels %q, want %q and one profile label", p.location, labels, SuiteLabel)
		}
	}
	names := map[string]int{}
	for _, sr := range specs {
		names[sr.FullText()]++
	}
	for name, n := range names {
		if n > 1 {
			t.Errorf("%d specs are called %q", n, name)
		}
	}
}

// TestLabelFilterSelectsTheTaggedScenarios: --ginkgo.label-filter selects
// exactly the scenarios whose tags say so, as the feature files have them.
func TestLabelFilterSelectsTheTaggedScenarios(t *testing.T) {
	all := pickles(t)
	tests := map[string]func(pickle) bool{
		"kep-4815": hasTag("@kep-4815"),
		"kep-4815 && core": func(p pickle) bool {
			return hasTag("@kep-4815")(p) && hasTag("@core")(p)
		},
		"extended && !emulator": func(p pickle) bool {
			return hasTag("@extended")(p) && !hasTag("@emulator")(p)
		},
		// The partitionable profile is KEP-4815 but for its partition types'
		// scenarios, which are the alpha profile's, and its TPU torus ones,
		// the tpu-torus profile's.
		"profile:partitionable": func(p pickle) bool {
			return hasTag("@kep-4815")(p) && !hasTag("@DRAPartitionableDevicesType")(p) && !hasTag("@tpu-torus")(p)
		},
		// The core profile is KEP-4381 but for the NVLink fabric and the
		// node's PCI topology, profiles of their own.
		"profile: containsAny core": func(p pickle) bool {
			return hasTag("@kep-4381")(p) && !hasTag("@nvlink-fabric")(p) && !hasTag("@pci-topology")(p)
		},
	}
	for filter, keep := range tests {
		want := matching(all, keep)
		if len(want) == 0 {
			t.Errorf("%s: no scenario of the feature files matches; the test checks nothing", filter)
		}
		run, filtered, _ := preview(t, filter)
		if diff := cmp.Diff(want, run); diff != "" {
			t.Errorf("--ginkgo.label-filter=%q (-tagged scenarios +selected specs):\n%s", filter, diff)
		}
		if len(run)+len(filtered) != len(all) {
			t.Errorf("%s: %d specs selected and %d filtered out of %d scenarios", filter, len(run), len(filtered), len(all))
		}
	}
	if fake.opened != 0 || len(fake.ran) != 0 {
		t.Errorf("the dry runs opened %d sessions and ran %d scenarios", fake.opened, len(fake.ran))
	}
}

// TestLabelsOf: tags become labels without "@", those Ginkgo refuses are
// left out, duplicates are dropped, and the profile is added.
func TestLabelsOf(t *testing.T) {
	got := labelsOf([]string{"@kep-4815", "@core", "@a/b", "@kep-4815", "@DRAPartitionableDevicesType", "@drapartitionabledevicestype"})
	want := []string{"kep-4815", "core", "DRAPartitionableDevicesType", "profile:alpha"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got := labelsOf([]string{"@x"}); !cmp.Equal(got, []string{"x"}) {
		t.Errorf("labels of a scenario without a profile = %q, want [x]", got)
	}
}

// TestJudge: how each scenario outcome maps onto its spec.
func TestJudge(t *testing.T) {
	st := settings{artifacts: "/art"}
	unclaimed := "capability partitionableDevices (KEP-4815) unclaimed"
	tests := map[string]struct {
		res  report.ScenarioResult
		st   settings
		want verdict
	}{
		"passed":              {report.ScenarioResult{Status: report.StatusPassed}, st, verdict{verdictPass, ""}},
		"skipped":             {report.ScenarioResult{Status: report.StatusSkipped, Message: unclaimed}, st, verdict{verdictSkip, unclaimed}},
		"skipped, skips fail": {report.ScenarioResult{Status: report.StatusSkipped, Message: unclaimed}, settings{failOnSkip: true}, verdict{verdictFail, "skipped, and skips fail this run (Config.FailOnSkip): " + unclaimed}},
		"failed":              {report.ScenarioResult{Status: report.StatusFailed, Message: "claim c: expected 2 devices, got 1", Diagnostics: "diagnostics/c-1.txt"}, st, verdict{verdictFail, "claim c: expected 2 devices, got 1\ndiagnostics: /art/diagnostics/c-1.txt"}},
		"failed in cleanup":   {report.ScenarioResult{Status: report.StatusFailed, Message: "clean up"}, st, verdict{verdictFail, "clean up"}},
		"undefined":           {report.ScenarioResult{Status: report.StatusUndefined}, st, verdict{verdictFail, "a step of the scenario is undefined: this build of the kit has no step definition for it"}},
		"pending":             {report.ScenarioResult{Status: report.StatusPending}, st, verdict{verdictFail, "a step of the scenario is pending"}},
		"an unknown status":   {report.ScenarioResult{Status: "odd"}, st, verdict{verdictFail, `scenario status "odd"`}},
	}
	for name, tc := range tests {
		if got := judge(tc.res, tc.st); got != tc.want {
			t.Errorf("%s: judge = %+v, want %+v", name, got, tc.want)
		}
	}
}

// TestSpecsRunTheScenarios runs the kit's container with a label filter
// against a fake session and checks, in Ginkgo's own report, that each
// selected spec ran its scenario once and passed, skipped or failed with the
// kit's words, and that the session was opened and closed once. It calls
// RunSpecs, which a process may call once: it must stay the last test that
// builds the tree.
func TestSpecsRunTheScenarios(t *testing.T) {
	all := pickles(t)
	want := matching(all, hasTag("@kep-5018"))
	if len(want) < 4 {
		t.Fatalf("KEP-5018 has %d scenarios; the test needs 4", len(want))
	}
	jsonReport := filepath.Join(t.TempDir(), "report.json")
	cfg, rcfg := gk.GinkgoConfiguration()
	cfg.LabelFilter = "kep-5018"
	rcfg.JSONReport = jsonReport
	rcfg.Succinct = true
	rcfg.NoColor = true
	suiteT := &recordingT{}
	if gk.RunSpecs(suiteT, "drakit conformance", cfg, rcfg) {
		t.Error("RunSpecs passed a suite with failed specs")
	}
	if !suiteT.failed {
		t.Error("RunSpecs did not fail its testing.T")
	}
	if fake.opened != 1 || fake.closed != 1 {
		t.Errorf("session opened %d and closed %d times, want 1 and 1", fake.opened, fake.closed)
	}
	ran := slices.Clone(fake.ran)
	sort.Strings(ran)
	if diff := cmp.Diff(want, ran); diff != "" {
		t.Errorf("scenarios run (-KEP-5018 +ran):\n%s", diff)
	}
	data, err := os.ReadFile(jsonReport)
	if err != nil {
		t.Fatal(err)
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil || len(reports) != 1 {
		t.Fatalf("Ginkgo's JSON report: %d reports, %v", len(reports), err)
	}
	states := map[string]types.SpecReport{}
	for _, sr := range reports[0].SpecReports {
		if sr.LeafNodeType == types.NodeTypeIt {
			states[sr.LeafNodeLocation.String()] = sr
		}
	}
	if len(states) != len(all) {
		t.Errorf("Ginkgo reports %d It specs, the features have %d scenarios", len(states), len(all))
	}
	for loc, sr := range states {
		if !slices.Contains(fake.ran, loc) && (sr.State != types.SpecStateSkipped || sr.Failure.Message != "") {
			t.Errorf("%s did not run but is %s %q, want filtered out", loc, sr.State, sr.Failure.Message)
		}
	}
	for i, loc := range fake.ran {
		sr, ok := states[loc]
		if !ok {
			t.Errorf("%s ran but has no spec report", loc)
			continue
		}
		wantState, wantMessage := types.SpecStatePassed, ""
		switch i % 4 {
		case 1:
			wantState, wantMessage = types.SpecStateSkipped, fakeSkip
		case 2:
			wantState, wantMessage = types.SpecStateFailed, "finding of "+loc+"\ndiagnostics: /artifacts/diagnostics/x.txt"
		case 3:
			wantState, wantMessage = types.SpecStateFailed, "a step of the scenario is undefined: this build of the kit has no step definition for it"
		}
		if sr.State != wantState || sr.Failure.Message != wantMessage {
			t.Errorf("%s: %s %q, want %s %q", loc, sr.State, sr.Failure.Message, wantState, wantMessage)
		}
	}
	entries := 0
	for _, sr := range reports[0].SpecReports {
		for _, e := range sr.ReportEntries {
			if e.Name == "drakit conformance reports" && e.StringRepresentation() == "/artifacts" {
				entries++
			}
		}
	}
	if entries != 1 {
		t.Errorf("%d report entries name the artifacts directory, want 1", entries)
	}
}

const fakeSkip = "capability adminAccess (KEP-5018) unclaimed"

// fakeSession cycles through outcomes: passed, skipped, failed, undefined.
type fakeSession struct {
	mu             sync.Mutex
	opened, closed int
	ran            []string
}

func (f *fakeSession) RunScenario(_ context.Context, uri string, line int) (report.ScenarioResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	loc := fmt.Sprintf("%s:%d", path.Join(featuresDir, uri), line)
	res := report.ScenarioResult{URI: uri, Line: line}
	switch len(f.ran) % 4 {
	case 0:
		res.Status = report.StatusPassed
	case 1:
		res.Status, res.Message = report.StatusSkipped, fakeSkip
	case 2:
		res.Status, res.Message, res.Diagnostics = report.StatusFailed, "finding of "+loc, "diagnostics/x.txt"
	case 3:
		res.Status = report.StatusUndefined
	}
	f.ran = append(f.ran, loc)
	return res, nil
}

func (f *fakeSession) Close(context.Context) (conformance.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed++
	return conformance.Result{}, nil
}

// recordingT is the testing.T RunSpecs fails, so that the suite's expected
// failures do not fail the test.
type recordingT struct{ failed bool }

func (r *recordingT) Fail() { r.failed = true }
