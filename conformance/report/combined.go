package report

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// Run is the result of one conformance run, named after its artifacts
// directory (make conformance writes gpu, nic, interpose, fabric, …).
type Run struct {
	Name   string
	Result Result
}

// ReadRun reads the cucumber report (cucumberFile) of the run whose
// artifacts are in dir.
func ReadRun(dir, cucumberFile string) (Run, error) {
	f, err := os.Open(filepath.Join(dir, cucumberFile))
	if err != nil {
		return Run{}, fmt.Errorf("read run %s: %w", dir, err)
	}
	defer f.Close()
	res, err := ParseCucumberJSON(f)
	if err != nil {
		return Run{}, fmt.Errorf("read run %s: %w", dir, err)
	}
	return Run{Name: filepath.Base(dir), Result: res}, nil
}

// kepRow is one KEP tag's line of the combined summary.
type kepRow struct {
	written int // scenarios of the features with the tag
	ran     Counts
	runs    []string
}

// Combined is the verdict of several runs: each run's (Judge), and theirs
// together (CombinedOutcome).
type Combined struct {
	Outcome Outcome
	Runs    []Verdict
}

// JudgeRuns judges each run and the runs together.
func JudgeRuns(runs []Run) Combined {
	c := Combined{}
	for _, r := range runs {
		c.Runs = append(c.Runs, Judge(r.Result))
	}
	c.Outcome = CombinedOutcome(c.Runs)
	return c
}

// Line is the combined summary's last line, in the words of a run's
// (Verdict.Line): for one run, the same line; the findings and reasons
// are those of every run.
func (c Combined) Line() string {
	if len(c.Runs) == 0 {
		return "verdict: " + c.Outcome.String() + " (no run)"
	}
	var all Verdict
	all.Outcome = c.Outcome
	for _, v := range c.Runs {
		if v.Outcome == c.Outcome {
			all.Findings = append(all.Findings, v.Findings...)
			all.CouldNotCertify = append(all.CouldNotCertify, v.CouldNotCertify...)
		}
	}
	return all.Line()
}

// ExitCode is the exit code of the runs together.
func (c Combined) ExitCode() int { return c.Outcome.ExitCode() }

// WriteCombinedSummary renders the summary of several runs of one kit
// invocation (make conformance's runs against each reference driver): a
// line per run, then a table with a line per KEP tag of the features in
// fsys and of the runs: how many scenarios the features hold, how many ran
// over all runs (a scenario may run against several drivers) and their
// outcome, and which runs ran them. A KEP whose scenarios ran in no run is
// named below the table; so is every scenario that did not pass. c is
// JudgeRuns(runs): each run's line says its verdict, the last line theirs.
func WriteCombinedSummary(w io.Writer, fsys fs.FS, runs []Run, c Combined) error {
	all, err := allScenarios(fsys)
	if err != nil {
		return err
	}
	rows := map[string]*kepRow{}
	row := func(tag string) *kepRow {
		if rows[tag] == nil {
			rows[tag] = &kepRow{}
		}
		return rows[tag]
	}
	for _, s := range all {
		// As Result.ByTag counts a run's scenarios: by KEP tag and by
		// profile gate tag.
		for _, t := range kepTagsOf(s.Tags) {
			row(t).written++
		}
		for _, t := range s.Tags {
			if slices.Contains(gateTags(0), t) {
				row(t).written++
			}
		}
	}
	var b strings.Builder
	var total Counts
	fmt.Fprintf(&b, "drakit conformance summary of %d runs\n", len(runs))
	for i, r := range runs {
		res := r.Result
		total.Passed += res.Passed
		total.Failed += res.Failed
		total.Skipped += res.Skipped
		total.Undefined += res.Undefined
		total.Pending += res.Pending
		fmt.Fprintf(&b, "run %s: %s; %d scenarios, %d passed, %d failed, %d skipped, %d undefined, %d pending\n",
			r.Name, c.Runs[i].Line(), res.Total(), res.Passed, res.Failed, res.Skipped, res.Undefined, res.Pending)
		for tag, c := range res.ByTag {
			kr := row(tag)
			kr.ran.Passed += c.Passed
			kr.ran.Failed += c.Failed
			kr.ran.Skipped += c.Skipped
			kr.ran.Undefined += c.Undefined
			kr.ran.Pending += c.Pending
			kr.runs = append(kr.runs, r.Name)
		}
	}
	fmt.Fprintf(&b, "all runs: %d scenarios run, %d passed, %d failed, %d skipped, %d undefined, %d pending; the features hold %d\n\n",
		total.Total(), total.Passed, total.Failed, total.Skipped, total.Undefined, total.Pending, len(all))

	tags := make([]string, 0, len(rows))
	for t := range rows {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEP\tWRITTEN\tRUN\tPASSED\tFAILED\tSKIPPED\tUNDEFINED\tPENDING\tRUNS")
	var notRun []string
	for _, t := range tags {
		r := rows[t]
		runs := strings.Join(r.runs, ",")
		if runs == "" {
			runs = "-"
			notRun = append(notRun, t)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", t, r.written, r.ran.Total(), r.ran.Passed, r.ran.Failed,
			r.ran.Skipped, r.ran.Undefined, r.ran.Pending, runs)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("render combined summary table: %w", err)
	}
	if len(notRun) > 0 {
		fmt.Fprintf(&b, "\nKEPs whose scenarios no run selected: %s\n", strings.Join(notRun, ", "))
	}
	var notPassed []string
	for _, r := range runs {
		for _, s := range r.Result.Scenarios {
			if s.Status != StatusPassed {
				notPassed = append(notPassed, fmt.Sprintf("  %s: %s %s:%d  %s", r.Name, s.Status, s.URI, s.Line, s.Name))
			}
		}
	}
	if len(notPassed) > 0 {
		fmt.Fprintf(&b, "\nnot passed (details in each run's summary.txt):\n%s\n", strings.Join(notPassed, "\n"))
	}
	fmt.Fprintf(&b, "\n%s\n", c.Line())
	_, err = io.WriteString(w, b.String())
	return err
}

// kepTagsOf returns the @kep-<number> tags among tags, or NoKEPTag.
func kepTagsOf(tags []string) []string {
	var out []string
	for _, t := range tags {
		if kepTag.MatchString(t) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		out = []string{NoKEPTag}
	}
	return out
}
