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
	Driver, Tags, Server string
	// DeviceKinds are the kinds of device the run requested.
	DeviceKinds []DeviceKind
	// Hardware says that the driver's devices are not drakit's emulator's
	// (they may be real devices, or simulated by the driver itself).
	Hardware bool
	// Reports are the run's report files, named above the verdict.
	Reports []string
}

// WriteSummary renders the human summary of a run whose verdict is v
// (Judge(r)): the counts of the driver's scenarios and of the cluster
// checks, a table per KEP tag, each profile's verdict, the findings and
// what kept the kit from certifying the driver, the warnings (advice no KEP
// or API requires, never counted), the cluster checks that did
// not pass, every other skipped scenario with its reason, and last the
// verdict's line.
func WriteSummary(w io.Writer, h SummaryHeader, r Result, v Verdict) error {
	var b strings.Builder
	hw := "drakit's emulator"
	if h.Hardware {
		hw = "the driver's own (not drakit's emulator)"
	}
	kinds := make([]string, 0, len(h.DeviceKinds))
	for _, k := range h.DeviceKinds {
		kinds = append(kinds, fmt.Sprintf("%s (DeviceClass %s)", k.Name, k.DeviceClass))
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
	fmt.Fprintf(&b, "driver: %s  devices: %s\n", h.Driver, hw)
	if len(kinds) > 0 {
		fmt.Fprintf(&b, "device kinds: %s\n", strings.Join(kinds, ", "))
	}
	if h.Server != "" {
		fmt.Fprintf(&b, "cluster: %s\n", h.Server)
	}
	fmt.Fprintf(&b, "tags: %s  order: %s\n", tags, order)
	fmt.Fprintf(&b, "driver checks: %s\n", v.Driver)
	fmt.Fprintf(&b, "cluster checks: %s (they validate the cluster, not the driver)\n\n", v.Cluster)

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

	if len(v.Profiles) > 0 {
		fmt.Fprintf(&b, "\nProfiles:\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, p := range v.Profiles {
			fmt.Fprintf(tw, "  %s\t%s\n", p.Name, profileLine(p))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("render summary profiles: %w", err)
		}
	}
	writeReasons(&b, "Findings (the driver is not conformant)", "error", v.Findings)
	writeReasons(&b, "Could not certify", "reason", v.CouldNotCertify)
	writeReasons(&b, "Warnings (not counted in the verdict)", "warning", v.Warnings)

	listed := map[string]bool{}
	for _, rs := range [][]Reason{v.Findings, v.CouldNotCertify} {
		for _, x := range rs {
			listed[x.Location] = true
		}
	}
	var clusterNotPassed, skipped, notEligibleList []ScenarioResult
	for _, s := range r.Scenarios {
		switch {
		case s.Status == StatusPassed:
		case s.Status == StatusSkipped && notEligible(s.Message):
			notEligibleList = append(notEligibleList, s)
		case isClusterCheck(s.Tags):
			clusterNotPassed = append(clusterNotPassed, s)
		case s.Status == StatusSkipped && !listed[location(s)]:
			skipped = append(skipped, s)
		}
	}
	writeScenarios(&b, "Cluster checks that did not pass (the cluster, not the driver)", clusterNotPassed)
	writeScenarios(&b, "Skipped (not passed: they do not apply to the driver, or are Extended and could not run)", skipped)
	writeScenarios(&b, "Not eligible on this cluster", notEligibleList)
	if len(h.Reports) > 0 {
		fmt.Fprintf(&b, "\nreports: %s\n", strings.Join(h.Reports, " "))
	}
	fmt.Fprintf(&b, "\n%s\n", v.Line())
	_, err := io.WriteString(w, b.String())
	return err
}

// profileLine is a profile's verdict in the summary's words.
func profileLine(p ProfileVerdict) string {
	switch p.Outcome {
	case NotConformant:
		return p.Outcome.String() + " (" + plural(len(p.Findings), "finding") + ")"
	case CouldNotCertify:
		return p.Outcome.String() + " (" + plural(len(p.CouldNotCertify), "reason") + ")"
	}
	return p.Outcome.String()
}

// writeReasons lists reasons under a title, each with its label.
func writeReasons(b *strings.Builder, title, label string, reasons []Reason) {
	if len(reasons) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n", title)
	for _, r := range reasons {
		if r.Location == "" {
			fmt.Fprintf(b, "  %s\n", indent(r.Message, "    "))
			continue
		}
		fmt.Fprintf(b, "  %s  %s\n", r.Location, r.Name)
		fmt.Fprintf(b, "    %s: %s\n", label, indent(r.Message, "      "))
		if r.Diagnostics != "" {
			fmt.Fprintf(b, "    diagnostics: %s\n", r.Diagnostics)
		}
	}
}

// writeScenarios lists scenarios under a title, with their status and
// message.
func writeScenarios(b *strings.Builder, title string, list []ScenarioResult) {
	if len(list) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n", title)
	for _, s := range list {
		fmt.Fprintf(b, "  %s  %s (%s)\n", location(s), s.Name, s.Status)
		if s.Message != "" {
			label := "error"
			if s.Status == StatusSkipped {
				label = "reason"
			}
			fmt.Fprintf(b, "    %s: %s\n", label, indent(s.Message, "      "))
		}
		if s.Diagnostics != "" {
			fmt.Fprintf(b, "    diagnostics: %s\n", s.Diagnostics)
		}
	}
}

// indent indents every line after the first.
func indent(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
