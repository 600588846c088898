package features

import (
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
)

var (
	kepDir = regexp.MustCompile(`^kep-([0-9]+)-[a-z0-9-]+$`)
	kepTag = regexp.MustCompile(`^@kep-[0-9]+$`)
)

// TestFeatures parses every embedded feature and checks the layout rules:
// features live in kep-<number>-<topic> directories, every scenario carries
// exactly one @kep-<number> tag, that of its directory, and exactly one of
// @core and @extended (conformance/report).
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
			var kepTags, levels []string
			for _, tag := range p.Tags {
				switch {
				case kepTag.MatchString(tag.Name) && !slices.Contains(kepTags, tag.Name):
					kepTags = append(kepTags, tag.Name)
				case (tag.Name == "@core" || tag.Name == "@extended") && !slices.Contains(levels, tag.Name):
					levels = append(levels, tag.Name)
				}
			}
			if len(kepTags) != 1 || kepTags[0] != wantTag {
				t.Errorf("%s: scenario %q has KEP tags %v, want exactly %s", file, p.Name, kepTags, wantTag)
			}
			if len(levels) != 1 {
				t.Errorf("%s: scenario %q has conformance tags %v, want exactly one of @core, @extended", file, p.Name, levels)
			}
			if len(p.Steps) == 0 {
				t.Errorf("%s: scenario %q has no steps", file, p.Name)
			}
		}
	}
	t.Logf("%d feature files, %d scenarios", len(files), scenarios)
}
