package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The kit writes junit.xml itself, from the cucumber report: godog v0.16's
// junit formatter has no <skipped> element, it marks a skipped scenario's
// steps as <error type="skipped"> and leaves the test case's status empty.
// Here a skipped scenario is <skipped message="reason"/>, a failed one
// <failure>, an undefined or pending one <error>.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// WriteJUnit renders the result as JUnit XML: one test suite per feature
// file, one test case per scenario (outline rows get " #<n>").
func WriteJUnit(w io.Writer, r Result) error {
	all := junitSuites{Name: "drakit"}
	index := map[string]int{}
	var total time.Duration
	names := map[string]int{}
	for _, s := range r.Scenarios {
		names[s.URI+"\x00"+s.Name]++
	}
	seen := map[string]int{}
	for _, s := range r.Scenarios {
		i, ok := index[s.URI]
		if !ok {
			i = len(all.Suites)
			index[s.URI] = i
			all.Suites = append(all.Suites, junitSuite{Name: s.Feature})
		}
		suite := &all.Suites[i]
		name := s.Name
		if key := s.URI + "\x00" + s.Name; names[key] > 1 {
			seen[key]++
			name = fmt.Sprintf("%s #%d", s.Name, seen[key])
		}
		tc := junitCase{Name: name, Classname: s.URI, Time: seconds(s.Duration)}
		text := fmt.Sprintf("%s:%d", s.URI, s.Line)
		if s.Diagnostics != "" {
			text += "\ndiagnostics: " + s.Diagnostics
		}
		if s.Message != "" {
			text += "\n" + s.Message
		}
		first := strings.ReplaceAll(s.Message, "\n", " ")
		switch s.Status {
		case StatusFailed:
			tc.Failure = &junitProblem{Message: first, Type: "failed", Text: text}
			suite.Failures++
		case StatusUndefined, StatusPending:
			tc.Error = &junitProblem{Message: "step " + string(s.Status), Type: string(s.Status), Text: text}
			suite.Errors++
		case StatusSkipped:
			tc.Skipped = &junitProblem{Message: first, Text: text}
			suite.Skipped++
		}
		suite.Tests++
		suite.Cases = append(suite.Cases, tc)
		total += s.Duration
	}
	for i := range all.Suites {
		var d time.Duration
		for _, s := range r.Scenarios {
			if index[s.URI] == i {
				d += s.Duration
			}
		}
		all.Suites[i].Time = seconds(d)
		all.Tests += all.Suites[i].Tests
		all.Failures += all.Suites[i].Failures
		all.Errors += all.Suites[i].Errors
		all.Skipped += all.Suites[i].Skipped
	}
	all.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
