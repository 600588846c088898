package kit

import (
	"bytes"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

// picked returns the scenarios godog runs for the path uri:line in fsys,
// as "<name> at line <line>" (an example row's line for outline rows):
// those whose Scenario keyword is at line, as godog selects by path:line.
func picked(fsys fs.FS, path string) ([]string, error) {
	uri, lineText, ok := strings.Cut(path, ":")
	if !ok {
		return nil, fmt.Errorf("godog path %q has no line", path)
	}
	data, err := fs.ReadFile(fsys, uri)
	if err != nil {
		return nil, err
	}
	ids := &messages.Incrementing{}
	doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(data), ids.NewId)
	if err != nil {
		return nil, fmt.Errorf("the served feature does not parse: %w", err)
	}
	if doc.Feature == nil {
		return nil, fmt.Errorf("the served feature has no Feature")
	}
	scenarioLines, rowLines := map[string]string{}, map[string]int{}
	for _, sc := range featureScenarios(doc.Feature.Children) {
		scenarioLines[sc.Id] = strconv.FormatInt(sc.Location.Line, 10)
		for _, ex := range sc.Examples {
			for _, row := range ex.TableBody {
				rowLines[row.Id] = int(row.Location.Line)
			}
		}
	}
	var out []string
	for _, p := range gherkin.Pickles(*doc, uri, ids.NewId) {
		if scenarioLines[p.AstNodeIds[0]] != lineText {
			continue
		}
		line, _ := strconv.Atoi(lineText)
		if len(p.AstNodeIds) > 1 {
			line = rowLines[p.AstNodeIds[len(p.AstNodeIds)-1]]
		}
		out = append(out, p.Name+" at line "+strconv.Itoa(line))
	}
	return out, nil
}

// TestOneScenarioSelectsEachEmbeddedScenario: for every scenario and
// example row of the embedded features, the file and godog path
// oneScenario returns hold exactly that scenario, at its line.
func TestOneScenarioSelectsEachEmbeddedScenario(t *testing.T) {
	t.Parallel()
	all, err := report.Selected(features.FS, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != countPickles(t) {
		t.Fatalf("report.Selected lists %d scenarios, the features have %d", len(all), countPickles(t))
	}
	for _, sel := range all {
		fsys, path, err := oneScenario(features.FS, sel.URI, sel.Line)
		if err != nil {
			t.Errorf("%s:%d: %v", sel.URI, sel.Line, err)
			continue
		}
		got, err := picked(fsys, path)
		if err != nil {
			t.Errorf("%s:%d: %v", sel.URI, sel.Line, err)
			continue
		}
		if want := []string{sel.Name + " at line " + strconv.Itoa(sel.Line)}; !cmp.Equal(want, got) {
			t.Errorf("%s:%d: godog path %s picks %q, want %q", sel.URI, sel.Line, path, got, want)
		}
	}
}

// FuzzOneScenario: for any feature file and line, oneScenario either
// refuses or serves a file in which godog's path picks exactly the
// scenario or example row that report.Selected lists at that line.
func FuzzOneScenario(f *testing.F) {
	f.Add(selfTestFeature, 4)
	f.Add(selfTestFeature, 9)
	f.Add(outlineTestFeature, 11)
	f.Add(outlineTestFeature, 16)
	f.Add(outlineTestFeature, 4)
	f.Add("Feature: f\n  Rule: r\n    Scenario Outline: o <x>\n      Given a\n      Examples:\n        | x |\n        # a comment\n        | 1 |\n        | 2 |\n", 9)
	f.Fuzz(func(t *testing.T, feature string, line int) {
		const uri = "kep-0-fuzz/f.feature"
		fsys := fstest.MapFS{uri: {Data: []byte(feature)}}
		served, path, err := oneScenario(fsys, uri, line)
		if err != nil {
			return
		}
		listed, err := report.Selected(fsys, "")
		if err != nil {
			t.Fatalf("oneScenario served a feature report.Selected cannot read: %v", err)
		}
		var want []string
		for _, s := range listed {
			if s.Line == line {
				want = append(want, s.Name+" at line "+strconv.Itoa(line))
			}
		}
		got, err := picked(served, path)
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		if len(want) != 1 || !cmp.Equal(want, got) {
			t.Fatalf("line %d: godog path %s picks %q, report.Selected lists %q there", line, path, got, want)
		}
	})
}
