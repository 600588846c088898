// Package allocate is drakit allocate: what-if DRA allocation of a scenario's claims with the reference allocator (and upstream's).
package allocate

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/oracle/allocator/bench"
	"drakit.dev/drakit/oracle/allocator/instances"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

// NewCommand returns drakit allocate.
func NewCommand() *cobra.Command {
	cfg := bench.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "allocate -f SCENARIO.yaml [--mode first-fit|packing] [--one-by-one] [--compare-upstream] [-o text|yaml]",
		Short: "What-if DRA allocation: allocate a scenario's claims with the reference allocator (and upstream's)",
		Long: `Allocate reads a scenario file (apiVersion: ` + scenario.APIVersion + `, kind: ` + scenario.Kind + `:
device classes, ResourceSlices, the node, claims already allocated and claims
to allocate) and prints the devices each claim gets, or why the claims do not
fit on the node. --compare-upstream also runs kube-scheduler's allocator
(k8s.io/dynamic-resource-allocation/structured v0.37.2) and prints both
results and times. 'drakit allocate generate' writes the built-in instances
as scenario files.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := bench.WhatIf(c.Context(), cfg, c.OutOrStdout())
			return err
		},
	}
	bindAllocateFlags(cmd, &cfg)
	cmd.AddCommand(newAllocateInstancesCommand(), newAllocateGenerateCommand())
	return cmd
}

func bindAllocateFlags(cmd *cobra.Command, cfg *bench.Config) {
	f := cmd.Flags()
	f.StringVarP(&cfg.File, "file", "f", cfg.File, "scenario YAML file")
	f.StringVar(&cfg.Mode, "mode", cfg.Mode, "reference allocator mode: first-fit (upstream's choice) or packing (keep capacity usable for later claims)")
	f.BoolVar(&cfg.OneByOne, "one-by-one", cfg.OneByOne, "allocate the claims one after another, committing each (pods arriving in order)")
	f.BoolVar(&cfg.CompareUpstream, "compare-upstream", cfg.CompareUpstream, "also run the upstream allocator and print both results and times")
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "time limit of each Allocate call (the scheduler's filter timeout is 10s)")
	f.StringVarP(&cfg.Output, "output", "o", cfg.Output, "output format: text or yaml")
}

func newAllocateInstancesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "instances",
		Short: "List the built-in instance families (hard instances H1–H5, fragmentation cases, easy paths) and their sizes",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			w := c.OutOrStdout()
			for _, f := range instances.Families() {
				sizes := make([]string, 0, len(f.Sizes))
				for _, s := range f.Sizes {
					sizes = append(sizes, fmt.Sprintf("%d/%d", s.N, s.K))
				}
				oneByOne := ""
				if f.OneByOne {
					oneByOne = " (pods one by one: --one-by-one)"
				}
				fmt.Fprintf(w, "%s: %s%s\n  n: %s; k: %s\n  sizes n/k: %s\n", f.Name, f.Description, oneByOne, f.N, f.K, strings.Join(sizes, " "))
			}
			return nil
		},
	}
}

// generateConfig is what `drakit allocate generate` does.
type generateConfig struct {
	Family string
	N, K   int
	Output string
}

func newAllocateGenerateCommand() *cobra.Command {
	var cfg generateConfig
	cmd := &cobra.Command{
		Use:   "generate --family NAME --n N --k K [--output FILE]",
		Short: "Write one built-in instance as a scenario YAML file (see 'drakit allocate instances')",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := instances.Generate(cfg.Family, cfg.N, cfg.K)
			if err != nil {
				return err
			}
			out, err := scenario.Marshal(s)
			if err != nil {
				return err
			}
			if cfg.Output == "" {
				_, err = c.OutOrStdout().Write(out)
				return err
			}
			if err := os.WriteFile(cfg.Output, out, 0o644); err != nil {
				return fmt.Errorf("write scenario %s: %w", cfg.Output, err)
			}
			return nil
		},
	}
	bindGenerateFlags(cmd, &cfg)
	for _, name := range []string{"family", "n"} {
		if err := cmd.MarkFlagRequired(name); err != nil {
			panic(err) // the flags are defined just above
		}
	}
	return cmd
}

func bindGenerateFlags(cmd *cobra.Command, cfg *generateConfig) {
	f := cmd.Flags()
	f.StringVar(&cfg.Family, "family", cfg.Family, "instance family, e.g. H3 (see 'drakit allocate instances')")
	f.IntVar(&cfg.N, "n", cfg.N, "first size parameter (usually the number of devices)")
	f.IntVar(&cfg.K, "k", cfg.K, "second size parameter (see the family)")
	f.StringVar(&cfg.Output, "output", cfg.Output, "file to write; empty: standard output")
}
