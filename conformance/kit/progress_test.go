package kit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cucumber/godog"

	"drakit.dev/drakit/conformance/inventory"
)

// TestProgressStatusLine drives the status line as a terminal shows it:
// scenarios done of the total, running, waiting for devices, the latest
// step; godog's own lines clear it and it is drawn again below them.
func TestProgressStatusLine(t *testing.T) {
	t.Parallel()
	var term bytes.Buffer
	p := newProgress(3, &term, false)
	p.out, p.live = &term, true // as on a terminal
	a, b := &godog.Scenario{Name: "a"}, &godog.Scenario{Name: "b"}
	p.start(a)
	p.start(b)
	p.waiting(b, inventory.Demand{Whole: 2})
	p.step(a, `pod "x" is running`)
	if got, want := p.line(200), `[0/3 done; 1 running, 1 waiting for devices] a: pod "x" is running`; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	w := p.writer(&term)
	term.Reset()
	if _, err := w.Write([]byte("godog output\n")); err != nil {
		t.Fatal(err)
	}
	if got := term.String(); !strings.HasPrefix(got, "\r\x1b[Kgodog output\n[0/3 done") {
		t.Errorf("a write clears the line and draws it again below: %q", got)
	}
	p.finish(a, "passed")
	p.finish(b, "skipped")
	if got, want := p.line(200), "[2/3 done: 1 passed, 1 skipped; 0 running] a: pod \"x\" is running"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	if got := p.line(20); len([]rune(got)) != 20 || !strings.HasSuffix(got, "…") {
		t.Errorf("a narrow terminal cuts the line: %q", got)
	}
}

// TestProgressLinesInALog: not on a terminal, with lines on, each finished
// scenario prints one line with n/N, its status and its time.
func TestProgressLinesInALog(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	p := newProgress(12, &log, true)
	sc := &godog.Scenario{Name: "a scenario"}
	p.start(sc)
	p.finish(sc, "failed")
	if got := log.String(); !strings.HasPrefix(got, "[ 1/12] failed ") || !strings.HasSuffix(got, "  a scenario\n") {
		t.Errorf("log line %q", got)
	}
	var quiet bytes.Buffer
	q := newProgress(1, &quiet, false)
	q.start(sc)
	q.finish(sc, "passed")
	if quiet.Len() != 0 {
		t.Errorf("without lines nothing is printed: %q", quiet.String())
	}
}
