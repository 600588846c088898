package features

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
)

var kepDir = regexp.MustCompile(`^kep-([0-9]+)-[a-z0-9-]+$`)

// TestFeatures parses every embedded feature and checks the layout rules:
// features live in kep-<number>-<topic> directories, and every scenario
// carries the @kep-<number> tag of its directory.
func TestFeatures(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(FS, "*/*.feature")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no feature files embedded")
	}
	scenarios := 0
	for _, file := range files {
		m := kepDir.FindStringSubmatch(path.Dir(file))
		if m == nil {
			t.Errorf("%s: directory is not named kep-<number>-<topic>", file)
			continue
		}
		wantTag := "@kep-" + m[1]
		data, err := FS.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ids := &messages.Incrementing{}
		doc, err := gherkin.ParseGherkinDocument(strings.NewReader(string(data)), ids.NewId)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if doc.Feature == nil {
			t.Errorf("%s: no Feature", file)
			continue
		}
		pickles := gherkin.Pickles(*doc, file, ids.NewId)
		if len(pickles) == 0 {
			t.Errorf("%s: no scenarios", file)
		}
		for _, p := range pickles {
			scenarios++
			tagged := false
			for _, tag := range p.Tags {
				if tag.Name == wantTag {
					tagged = true
				}
			}
			if !tagged {
				t.Errorf("%s: scenario %q lacks the tag %s", file, p.Name, wantTag)
			}
			if len(p.Steps) == 0 {
				t.Errorf("%s: scenario %q has no steps", file, p.Name)
			}
		}
	}
	t.Logf("%d feature files, %d scenarios", len(files), scenarios)
}
