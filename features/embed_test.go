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
	// topicDirs are the directories of features that span KEPs.
	topicDirs = []string{"tpu-torus"}
)

// TestFeatures parses every embedded feature and checks the layout rules:
// features live in kep-<number>-<topic> directories, every scenario carries
// exactly one @kep-<number> tag, that of its directory (any one in a topic
// directory, whose scenarios carry @<topic>), and exactly one of
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
		wantTag, topicTag := "", ""
		if m := kepDir.FindStringSubmatch(path.Dir(file)); m != nil {
			wantTag = "@kep-" + m[1]
		} else if slices.Contains(topicDirs, path.Dir(file)) {
			topicTag = "@" + path.Dir(file)
		} else {
			t.Errorf("%s: directory is not named kep-<number>-<topic> nor a topic directory %v", file, topicDirs)
			continue
		}
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
			switch {
			case topicTag != "" && !slices.ContainsFunc(p.Tags, func(tag *messages.PickleTag) bool { return tag.Name == topicTag }):
				t.Errorf("%s: scenario %q lacks the topic tag %s", file, p.Name, topicTag)
			case topicTag != "" && len(kepTags) != 1:
				t.Errorf("%s: scenario %q has KEP tags %v, want exactly one", file, p.Name, kepTags)
			case topicTag == "" && (len(kepTags) != 1 || kepTags[0] != wantTag):
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
