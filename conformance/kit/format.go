package kit

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/cucumber/godog"
	"github.com/cucumber/godog/formatters"
)

// godog's pretty and progress formatters end with "N scenarios (P passed,
// …)", in which a scenario whose steps passed or were skipped counts as
// passed: a run of skips reads as a run of passes. The kit's formatters are
// godog's, with that line counting skipped scenarios as skipped.
const (
	prettyFormat   = "drakit-pretty"
	progressFormat = "drakit-progress"
)

func init() {
	godog.Format(prettyFormat, "godog's pretty output; its closing line counts skipped scenarios as skipped", newPrettyFormatter)
	godog.Format(progressFormat, "godog's progress output; its closing line counts skipped scenarios as skipped", newProgressFormatter)
}

// formatName is the kit's formatter for Config.Format.
func formatName(format string) string {
	if format == "progress" {
		return progressFormat
	}
	return prettyFormat
}

// prettyFormatter is godog's pretty formatter with the kit's closing line.
// Embedding the formatter keeps the methods godog looks for (SetStorage).
type prettyFormatter struct {
	*godog.PrettyFmt
	out *summaryWriter
}

func newPrettyFormatter(suite string, out io.Writer) formatters.Formatter {
	w := &summaryWriter{out: out}
	return prettyFormatter{PrettyFmt: godog.NewPrettyFmt(suite, w), out: w}
}

func (f prettyFormatter) Summary() {
	f.out.summary(f.PrettyFmt.Summary, stepStatuses(f.Storage.MustGetPickleResults(), f.Storage.MustGetPickleStepResultsByPickleID))
}

// progressFormatter is godog's progress formatter with the kit's closing
// line.
type progressFormatter struct {
	*godog.ProgressFmt
	out *summaryWriter
}

func newProgressFormatter(suite string, out io.Writer) formatters.Formatter {
	w := &summaryWriter{out: out}
	return progressFormatter{ProgressFmt: godog.NewProgressFmt(suite, w), out: w}
}

func (f progressFormatter) Summary() {
	f.out.summary(f.ProgressFmt.Summary, stepStatuses(f.Storage.MustGetPickleResults(), f.Storage.MustGetPickleStepResultsByPickleID))
}

// stepStatuses are the step statuses of each scenario, from godog's
// storage: its result types are internal to godog, so their PickleID and
// Status fields are read by name.
func stepStatuses[PR, SR any](results []PR, steps func(pickleID string) []SR) [][]string {
	var out [][]string
	for _, pr := range results {
		var statuses []string
		for _, sr := range steps(reflect.ValueOf(pr).FieldByName("PickleID").String()) {
			statuses = append(statuses, fmt.Sprint(reflect.ValueOf(sr).FieldByName("Status").Interface()))
		}
		out = append(out, statuses)
	}
	return out
}

// summaryWriter passes a formatter's output through, except while the
// summary is written: that is captured and its closing line rewritten.
type summaryWriter struct {
	out       io.Writer
	mu        sync.Mutex
	capturing bool
	captured  bytes.Buffer
}

func (w *summaryWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.capturing {
		return w.captured.Write(p)
	}
	return w.out.Write(p)
}

// scenariosLine is godog's closing line, colored or not.
var scenariosLine = regexp.MustCompile(`(?m)^\d+ scenarios \(.*\)$`)

// summary runs godog's summary into a buffer, replaces its scenario line
// with one counted from the scenarios' step statuses, and writes it out.
func (w *summaryWriter) summary(write func(), statuses [][]string) {
	w.mu.Lock()
	w.capturing = true
	w.captured.Reset()
	w.mu.Unlock()
	write()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.capturing = false
	text := scenariosLine.ReplaceAllLiteralString(w.captured.String(), closingLine(statuses))
	io.WriteString(w.out, text) //nolint:errcheck // godog's formatters ignore write errors too
}

// closingLine counts scenarios by their steps' statuses as the kit's report
// does: failed or ambiguous, else undefined, else pending, else skipped,
// else passed.
func closingLine(scenarios [][]string) string {
	order := []string{"passed", "failed", "skipped", "undefined", "pending"}
	counts := map[string]int{}
	for _, steps := range scenarios {
		status := "passed"
		has := map[string]bool{}
		for _, s := range steps {
			has[s] = true
		}
		switch {
		case len(steps) == 0:
			status = "undefined"
		case has["failed"] || has["ambiguous"]:
			status = "failed"
		case has["undefined"]:
			status = "undefined"
		case has["pending"]:
			status = "pending"
		case has["skipped"]:
			status = "skipped"
		}
		counts[status]++
	}
	var parts []string
	for _, s := range order {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	return fmt.Sprintf("%d scenarios (%s)", len(scenarios), strings.Join(parts, ", "))
}
