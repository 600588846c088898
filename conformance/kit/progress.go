package kit

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"
	"golang.org/x/term"

	"drakit.dev/drakit/conformance/inventory"
)

// progress follows a run's scenarios. On a terminal it keeps a status line
// under godog's output: scenarios done of the run's total, how many run and
// wait for devices, and the step the latest scenario is at. Elsewhere (a CI
// log) it prints a line per finished scenario with the progress format,
// whose dots say nothing of which scenario is slow.
type progress struct {
	total int
	// out is where status or finish lines go; nil prints nothing.
	out io.Writer
	// live says that out is a terminal: a status line, redrawn.
	live bool

	mu      sync.Mutex
	done    int
	counts  map[string]int
	started map[*godog.Scenario]time.Time
	waits   map[*godog.Scenario]string
	current string
	shown   bool
}

// newProgress follows total scenarios on output: a status line when output
// is a terminal, finish lines when lines is set, nothing otherwise.
func newProgress(total int, output io.Writer, lines bool) *progress {
	p := &progress{total: total, counts: map[string]int{}, started: map[*godog.Scenario]time.Time{}, waits: map[*godog.Scenario]string{}}
	if f, ok := output.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.out, p.live = f, true
	} else if lines {
		p.out = output
	}
	return p
}

// writer wraps godog's output so that the status line is cleared before
// godog writes and drawn again after it.
func (p *progress) writer(out io.Writer) io.Writer {
	if p == nil || !p.live {
		return out
	}
	return statusLineWriter{p: p, out: out}
}

type statusLineWriter struct {
	p   *progress
	out io.Writer
}

func (w statusLineWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	w.p.clear()
	n, err := w.out.Write(b)
	if bytes.HasSuffix(b, []byte("\n")) {
		w.p.draw()
	}
	return n, err
}

func (p *progress) start(sc *godog.Scenario) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started[sc] = time.Now()
	p.current = sc.Name
	p.redraw()
}

func (p *progress) waiting(sc *godog.Scenario, d inventory.Demand) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waits[sc] = d.String()
	p.redraw()
}

func (p *progress) step(sc *godog.Scenario, text string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.waits, sc)
	p.current = sc.Name + ": " + text
	p.redraw()
}

// finish counts a scenario as done with its status (passed, failed,
// skipped, undefined, pending).
func (p *progress) finish(sc *godog.Scenario, status string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	took := time.Since(p.started[sc]).Round(100 * time.Millisecond)
	delete(p.started, sc)
	delete(p.waits, sc)
	p.done++
	p.counts[status]++
	if p.out != nil && !p.live {
		fmt.Fprintf(p.out, "[%*d/%d] %-9s %6s  %s\n", len(fmt.Sprint(p.total)), p.done, p.total, status, took, sc.Name)
		return
	}
	p.redraw()
}

// line is the status line, at most width characters.
func (p *progress) line(width int) string {
	var parts []string
	for _, s := range []string{"passed", "failed", "skipped", "undefined", "pending"} {
		if p.counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.counts[s], s))
		}
	}
	s := fmt.Sprintf("[%d/%d done", p.done, p.total)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	s += fmt.Sprintf("; %d running", len(p.started)-len(p.waits))
	if len(p.waits) > 0 {
		s += fmt.Sprintf(", %d waiting for devices", len(p.waits))
	}
	s += "] " + p.current
	if r := []rune(s); len(r) > width {
		s = string(r[:width-1]) + "…"
	}
	return s
}

// redraw, clear and draw run with mu held.
func (p *progress) redraw() {
	if !p.live {
		return
	}
	p.clear()
	p.draw()
}

func (p *progress) clear() {
	if p.shown {
		io.WriteString(p.out, "\r\x1b[K") //nolint:errcheck // a lost status line is harmless
		p.shown = false
	}
}

func (p *progress) draw() {
	if p.done == p.total && len(p.started) == 0 {
		return
	}
	width := 100
	if f, ok := p.out.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 10 {
			width = w
		}
	}
	io.WriteString(p.out, p.line(width)) //nolint:errcheck // a lost status line is harmless
	p.shown = true
}
