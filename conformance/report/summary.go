package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// SummaryHeader describes the run in the summary's first lines.
type SummaryHeader struct {
	Driver, DeviceClass, Tags, Server string
	Hardware                          bool
}

// WriteSummary renders the human summary: totals, a table per KEP tag, and
// every failed, undefined, pending and skipped scenario with its reason.
func WriteSummary(w io.Writer, h SummaryHeader, r Result) error {
	var b strings.Builder
	hw := "emulated (drakit emulator)"
	if h.Hardware {
		hw = "real GPUs"
	}
	tags := h.Tags
	if tags == "" {
		tags = "(all scenarios)"
	}
	order := "as written"
	if r.Seed != 0 {
		order = fmt.Sprintf("random, seed %d", r.Seed)
	}
	fmt.Fprintf(&b, "drakit conformance summary\n")
	fmt.Fprintf(&b, "driver: %s  device class: %s  hardware: %s\n", h.Driver, h.DeviceClass, hw)
	if h.Server != "" {
		fmt.Fprintf(&b, "cluster: %s\n", h.Server)
	}
	fmt.Fprintf(&b, "tags: %s  order: %s\n", tags, order)
	fmt.Fprintf(&b, "scenarios: %d total, %d passed, %d failed, %d skipped, %d undefined, %d pending\n\n",
		r.Total(), r.Passed, r.Failed, r.Skipped, r.Undefined, r.Pending)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TAG\tTOTAL\tPASSED\tFAILED\tSKIPPED\tUNDEFINED\tPENDING\t")
	keys := make([]string, 0, len(r.ByTag))
	for k := range r.ByTag {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := r.ByTag[k]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", k, c.Total(), c.Passed, c.Failed, c.Skipped, c.Undefined, c.Pending)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("render summary table: %w", err)
	}

	sections := []struct {
		title  string
		status Status
	}{
		{"Failed", StatusFailed},
		{"Undefined (steps without a definition)", StatusUndefined},
		{"Pending", StatusPending},
		{"Skipped (not passed: the cluster or driver cannot exercise them)", StatusSkipped},
	}
	for _, sec := range sections {
		var list []ScenarioResult
		for _, s := range r.Scenarios {
			if s.Status == sec.status {
				list = append(list, s)
			}
		}
		if len(list) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:\n", sec.title)
		for _, s := range list {
			fmt.Fprintf(&b, "  %s:%d  %s\n", s.URI, s.Line, s.Name)
			if s.Message != "" {
				label := "error"
				if s.Status == StatusSkipped {
					label = "reason"
				}
				fmt.Fprintf(&b, "    %s: %s\n", label, indent(s.Message, "      "))
			}
			if s.Diagnostics != "" {
				fmt.Fprintf(&b, "    diagnostics: %s\n", s.Diagnostics)
			}
		}
	}
	verdict := "PASSED"
	switch {
	case r.Total() == 0:
		verdict = "FAILED (no scenario ran)"
	case !r.OK():
		verdict = "FAILED"
	case r.Skipped > 0:
		verdict = fmt.Sprintf("PASSED with %d skipped", r.Skipped)
	}
	fmt.Fprintf(&b, "\nresult: %s\n", verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// indent indents every line after the first.
func indent(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
