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
Exits non-zero when a run failed, ran nothing, or (--fail-on-skip) skipped a
scenario. A run is named after its directory, or NAME in NAME=DIR.`,
		Example: `  drakit conformance summarize --out artifacts/summary.txt --fail-on-skip artifacts/gpu artifacts/nic fabric=artifacts/fabric/kit`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			var runs []report.Run
			for _, arg := range dirs {
				name, d, named := strings.Cut(arg, "=")
				if !named {
					d = arg
				}
				r, err := report.ReadRun(d, conformance.CucumberFile)
				if err != nil {
					return err
				}
				if named {
					if name == "" {
						return fmt.Errorf("run %q: empty name before '='", arg)
					}
					r.Name = name
				}
				r.Result.SkipsFail = failOnSkip
				runs = append(runs, r)
			}
			var b bytes.Buffer
			if err := report.WriteCombinedSummary(&b, features.FS, runs); err != nil {
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
			if !report.CombinedOK(runs) {
				return errors.New("conformance summary: a run failed, ran nothing, or skipped a scenario (see above)")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "also write the summary to this file")
	cmd.Flags().BoolVar(&failOnSkip, "fail-on-skip", false, "a skipped scenario fails the summary (the runs were made with --fail-on-skip)")
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
