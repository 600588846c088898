package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

// newConformanceSummarizeCommand is `drakit conformance summarize`: one
// summary of several runs' artifacts, per KEP.
func newConformanceSummarizeCommand() *cobra.Command {
	var out string
	var failOnSkip bool
	cmd := &cobra.Command{
		Use:   "summarize [NAME=]RUN_ARTIFACTS_DIR...",
		Short: "Summarize several conformance runs per KEP (make conformance writes artifacts/summary.txt so)",
		Long: `Reads the cucumber.json of each run's artifacts directory (one drakit
conformance run each: make conformance runs the kit against the GPU, NIC,
CPU and TPU drivers) and writes one summary: a line per run, then a line per
KEP tag of the features and of the runs with the scenarios the features hold,
how many ran over all runs and their outcome, and which runs ran them. KEPs no
run selected and every scenario that did not pass are listed below the table.
A run is named after its directory, or NAME in NAME=DIR.

Each run is judged again from its cucumber.json as drakit conformance judged
it (give --fail-on-skip when the runs had it): one run's verdict and exit
code are the run's. Together the runs are Not conformant when one is, else
Could not certify when one is, else Conformant; the last line says so, and
the exit code is drakit conformance's: 0 Conformant, 1 Not conformant,
2 usage error (bad flags, a run directory without a cucumber.json that
parses), 3 Could not certify.`,
		Example: `  drakit conformance summarize --out artifacts/summary.txt --fail-on-skip artifacts/gpu artifacts/nic fabric=artifacts/fabric/kit`,
		Args:    cli.UsageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			var runs []report.Run
			for _, arg := range dirs {
				name, d, named := strings.Cut(arg, "=")
				if !named {
					d = arg
				}
				r, err := report.ReadRun(d, conformance.CucumberFile)
				if err != nil {
					return cli.UsageError(err)
				}
				if named {
					if name == "" {
						return cli.UsageError(fmt.Errorf("run %q: empty name before '='", arg))
					}
					r.Name = name
				}
				r.Result.SkipsFail = failOnSkip
				runs = append(runs, r)
			}
			verdict := report.JudgeRuns(runs)
			var b bytes.Buffer
			if err := report.WriteCombinedSummary(&b, features.FS, runs, verdict); err != nil {
				return err
			}
			if out != "" {
				if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
					return fmt.Errorf("write summary %s: %w", out, err)
				}
			}
			if _, err := cmd.OutOrStdout().Write(b.Bytes()); err != nil {
				return fmt.Errorf("print summary: %w", err)
			}
			if verdict.Outcome != report.Conformant {
				return &cli.ExitError{Code: verdict.ExitCode(), Err: errors.New(verdict.Line()), Bare: true}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "also write the summary to this file")
	cmd.Flags().BoolVar(&failOnSkip, "fail-on-skip", false, "judge the runs as made with --fail-on-skip: a skipped Extended scenario or cluster check keeps the kit from certifying the driver")
	return cmd
}

// newConformanceCatalogueCommand is `drakit conformance catalogue`: every
// scenario of the features by KEP, as Markdown. With --out it writes
// docs/scenarios.md, with --readme the README's table of profiles (make
// docs does both; TestScenariosDocIsCurrent and TestReadmeCoverageIsCurrent
// fail while either is out of date).
func newConformanceCatalogueCommand() *cobra.Command {
	var out, readme string
	cmd := &cobra.Command{
		Use:   "catalogue [--out docs/scenarios.md] [--readme README.md]",
		Short: "List every scenario of the features by KEP, as Markdown; write docs/scenarios.md and the README's table of profiles",
		Long: `Prints every scenario of drakit's features, grouped by KEP tag: a table of
KEPs with their Core and Extended counts and how many check the driver and
how many the cluster (@cluster-check), then each KEP's scenarios.

--out FILE writes the whole scenarios document (docs/scenarios.md: the table
of profiles, then the catalogue) to FILE instead. --readme FILE replaces the
table of profiles between FILE's coverage markers (` + coverageBegin + ` and
` + coverageEnd + `). make docs runs both; go test ./cmd/drakit/... fails while
docs/scenarios.md or the README's table differs from what the features say.`,
		Example: `  drakit conformance catalogue --out docs/scenarios.md --readme README.md`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" && readme == "" {
				return report.WriteCatalogue(cmd.OutOrStdout(), features.FS)
			}
			if out != "" {
				var b bytes.Buffer
				if err := writeScenariosDoc(&b, features.FS); err != nil {
					return err
				}
				if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
					return fmt.Errorf("write %s: %w", out, err)
				}
			}
			if readme != "" {
				data, err := os.ReadFile(readme)
				if err != nil {
					return fmt.Errorf("read %s: %w", readme, err)
				}
				text, err := spliceCoverage(string(data), features.FS)
				if err != nil {
					return fmt.Errorf("%s: %w", readme, err)
				}
				if err := os.WriteFile(readme, []byte(text), 0o644); err != nil {
					return fmt.Errorf("write %s: %w", readme, err)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the scenarios document (docs/scenarios.md) to this file instead of printing the catalogue")
	cmd.Flags().StringVar(&readme, "readme", "", "replace the table of profiles between this README's coverage markers")
	return cmd
}

// The markers of the generated parts: the catalogue in docs/scenarios.md
// (features/readme_test.go reads it there too), the table of profiles in
// the README.
const (
	scenariosBegin = "<!-- scenarios:begin -->"
	scenariosEnd   = "<!-- scenarios:end -->"
	coverageBegin  = "<!-- coverage:begin -->"
	coverageEnd    = "<!-- coverage:end -->"
)

// writeScenariosDoc writes docs/scenarios.md: a title, the table of
// profiles, and the catalogue between the scenarios markers.
func writeScenariosDoc(w io.Writer, fsys fs.FS) error {
	var b strings.Builder
	b.WriteString("# Scenarios\n\n")
	b.WriteString("<!-- Generated from features/ by `drakit conformance catalogue --out docs/scenarios.md` (make docs). Do not edit: go test ./cmd/drakit/... fails while this file differs from what the features say. -->\n\n")
	b.WriteString("Every scenario of drakit's features (`features/`). Each is Core or Extended and checks either the driver or the cluster: a cluster check (`@cluster-check`) judges the API server, the scheduler, a controller or the kubelet and never counts in the driver's verdict. What the scenarios check, in prose: [checks.md](checks.md). Profiles and verdicts: [certifying-a-driver.md](certifying-a-driver.md#profiles-and-what-conformant-means).\n\n")
	b.WriteString("## By profile\n\n")
	if err := writeCoverage(&b, fsys); err != nil {
		return err
	}
	b.WriteString("\n## By KEP\n\n")
	b.WriteString(scenariosBegin + "\n")
	if err := report.WriteCatalogue(&b, fsys); err != nil {
		return err
	}
	b.WriteString(scenariosEnd + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCoverage writes a table of the conformance profiles: each
// profile's KEPs and how many of its scenarios are Core and Extended,
// driver and cluster checks, with a row of totals.
func writeCoverage(w io.Writer, fsys fs.FS) error {
	all, err := report.Selected(fsys, "")
	if err != nil {
		return err
	}
	type counts struct{ core, ext, cluster int }
	byProfile := map[string]*counts{}
	kepsOf := map[string]map[int]bool{}
	allKEPs := map[int]bool{}
	var total counts
	for _, s := range all {
		name, ok := report.ProfileOf(s.Tags)
		if !ok {
			return fmt.Errorf("%s:%d: scenario %q is in no profile", s.URI, s.Line, s.Name)
		}
		c := byProfile[name]
		if c == nil {
			c, kepsOf[name] = &counts{}, map[int]bool{}
			byProfile[name] = c
		}
		for _, t := range s.Tags {
			if n, err := strconv.Atoi(strings.TrimPrefix(t, "@kep-")); err == nil && strings.HasPrefix(t, "@kep-") {
				kepsOf[name][n], allKEPs[n] = true, true
			}
		}
		for _, c := range []*counts{c, &total} {
			if slices.Contains(s.Tags, report.ExtendedTag) {
				c.ext++
			} else {
				c.core++
			}
			if slices.Contains(s.Tags, report.ClusterCheckTag) {
				c.cluster++
			}
		}
	}
	var b strings.Builder
	b.WriteString("| Profile | KEPs | Core | Extended | Driver checks | Cluster checks |\n|---|---|---|---|---|---|\n")
	for _, name := range report.ProfileNames() {
		c := byProfile[name]
		if c == nil {
			c = &counts{}
		}
		var keps []string
		for _, n := range slices.Sorted(maps.Keys(kepsOf[name])) {
			keps = append(keps, "KEP-"+strconv.Itoa(n))
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d | %d | %d | %d |\n", name, strings.Join(keps, ", "), c.core, c.ext, c.core+c.ext-c.cluster, c.cluster)
	}
	fmt.Fprintf(&b, "| all | %d KEPs | %d | %d | %d | %d |\n", len(allKEPs), total.core, total.ext, total.core+total.ext-total.cluster, total.cluster)
	_, err = io.WriteString(w, b.String())
	return err
}

// spliceCoverage returns readme with the table of profiles between its
// coverage markers.
func spliceCoverage(readme string, fsys fs.FS) (string, error) {
	begin, end := strings.Index(readme, coverageBegin), strings.Index(readme, coverageEnd)
	if begin < 0 || end < begin {
		return "", fmt.Errorf("no %s … %s markers", coverageBegin, coverageEnd)
	}
	var b strings.Builder
	if err := writeCoverage(&b, fsys); err != nil {
		return "", err
	}
	return readme[:begin+len(coverageBegin)] + "\n" + b.String() + readme[end:], nil
}
