package kit

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
)

// oneScenario returns the file system and the godog path that run exactly
// the scenario of the feature file uri at line, a scenario's line or an
// example row's (report.Selected's lines). godog selects a scenario by
// path:line, but only by the line of the Scenario (Outline) keyword, which
// runs every example row of an outline: for one row, the feature file is
// served with the outline's other rows turned into comments, every line
// where it was, so that the row keeps its line in the reports.
func oneScenario(fsys fs.FS, uri string, line int) (fs.FS, string, error) {
	data, err := fs.ReadFile(fsys, uri)
	if err != nil {
		return nil, "", fmt.Errorf("read feature %s: %w", uri, err)
	}
	doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(data), (&messages.Incrementing{}).NewId)
	if err != nil {
		return nil, "", fmt.Errorf("parse feature %s: %w", uri, err)
	}
	if doc.Feature == nil {
		return nil, "", fmt.Errorf("feature %s has no Feature", uri)
	}
	for _, sc := range featureScenarios(doc.Feature.Children) {
		var rows []*messages.TableRow
		for _, ex := range sc.Examples {
			rows = append(rows, ex.TableBody...)
		}
		if int(sc.Location.Line) == line {
			if len(sc.Examples) > 0 {
				return nil, "", fmt.Errorf("%s:%d is a Scenario Outline: give the line of one of its example rows", uri, line)
			}
			return fsys, scenarioPath(uri, sc.Location.Line), nil
		}
		for _, row := range rows {
			if int(row.Location.Line) != line {
				continue
			}
			others := map[int]bool{}
			for _, r := range rows {
				if r != row {
					others[int(r.Location.Line)] = true
				}
			}
			return fileFS{name: uri, data: commentLines(data, others)}, scenarioPath(uri, sc.Location.Line), nil
		}
	}
	return nil, "", fmt.Errorf("no scenario or example row at %s:%d", uri, line)
}

// featureScenarios are the scenarios of a feature, those in its rules too.
func featureScenarios(children []*messages.FeatureChild) []*messages.Scenario {
	var out []*messages.Scenario
	for _, c := range children {
		if c.Scenario != nil {
			out = append(out, c.Scenario)
		}
		if c.Rule != nil {
			for _, rc := range c.Rule.Children {
				if rc.Scenario != nil {
					out = append(out, rc.Scenario)
				}
			}
		}
	}
	return out
}

// commentLines turns the lines (1-based) of data in lines into Gherkin
// comments.
func commentLines(data []byte, lines map[int]bool) []byte {
	src := strings.SplitAfter(string(data), "\n")
	var out strings.Builder
	for i, l := range src {
		if lines[i+1] {
			out.WriteString("# ")
		}
		out.WriteString(l)
	}
	return []byte(out.String())
}

// fileFS is a file system holding one file, name (slash-separated, as
// io/fs names go).
type fileFS struct {
	name string
	data []byte
}

func (f fileFS) Open(name string) (fs.File, error) {
	if name != f.name {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &openFile{fileInfo: fileInfo{name: name[strings.LastIndex(name, "/")+1:], size: int64(len(f.data))}, r: bytes.NewReader(f.data)}, nil
}

// openFile is fileFS's file, opened.
type openFile struct {
	fileInfo
	r io.Reader
}

func (f *openFile) Stat() (fs.FileInfo, error) { return f.fileInfo, nil }
func (f *openFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *openFile) Close() error               { return nil }

// fileInfo describes fileFS's file: a read-only regular file.
type fileInfo struct {
	name string
	size int64
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o444 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }
