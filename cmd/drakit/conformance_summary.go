package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

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
		Args:    usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			var runs []report.Run
			for _, arg := range dirs {
				name, d, named := strings.Cut(arg, "=")
				if !named {
					d = arg
				}
				r, err := report.ReadRun(d, conformance.CucumberFile)
				if err != nil {
					return usageError(err)
				}
				if named {
					if name == "" {
						return usageError(fmt.Errorf("run %q: empty name before '='", arg))
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
				return &exitError{code: verdict.ExitCode(), err: errors.New(verdict.Line()), bare: true}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "also write the summary to this file")
	cmd.Flags().BoolVar(&failOnSkip, "fail-on-skip", false, "judge the runs as made with --fail-on-skip: a skipped Extended scenario or cluster check keeps the kit from certifying the driver")
	return cmd
}

// newConformanceCatalogueCommand is `drakit conformance catalogue`: every
// scenario of the features by KEP, as Markdown (README's "What a run
// checks").
func newConformanceCatalogueCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "catalogue",
		Short: "List every scenario of the features by KEP, as Markdown",
		Long: `Prints every scenario of drakit's features, grouped by KEP tag: a table of
KEPs with their Core and Extended counts, then each KEP's scenarios. README's
"What a run checks" holds this output (a test keeps the two equal).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return report.WriteCatalogue(cmd.OutOrStdout(), features.FS)
		},
	}
}
