// Package cli is what drakit's command groups share: the root command's
// conventions (NewRoot), exit codes, the Kubernetes client flags, path
// flags made absolute, the local cluster's flags and a few flag usages.
//
// Every command group is a package of its own (cmd/drakit/internal/<group>)
// with a plain constructor; cmd/drakit's newRootCommand lists them all, the
// one place that wires the command line. Every subcommand only maps flags
// onto a library Config and calls its Run.
package cli

import (
	"github.com/spf13/cobra"

	"drakit.dev/drakit/internal/logflags"
)

// NewRoot returns drakit's root command with groups: the Kubernetes
// component conventions for every subcommand, the logging flags of
// component-base (-v, --vmodule, --logging-format) applied before it runs,
// which finds the contextual logger (klog.FromContext) in cmd.Context(), and
// its relative path flags (PathFlags) made absolute; flag errors are usage
// errors.
func NewRoot(groups ...*cobra.Command) *cobra.Command {
	logging := logflags.New()
	root := &cobra.Command{
		Use:   "drakit",
		Short: "Conformance kit for Kubernetes Dynamic Resource Allocation, with emulated hardware",
		Long: `drakit certifies DRA drivers against the Kubernetes 1.37 KEPs.

It runs a real Kubernetes cluster as local processes (drakit env), emulates
accelerator hardware (sysfs, devfs, procfs and an NVML library), deploys the
reference DRA drivers and runs Gherkin conformance features against any
driver.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Every subcommand's: the logging flags are applied and the
		// command's context carries the logger.
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			if err := logging.Apply(); err != nil {
				return UsageError(err)
			}
			if err := AbsolutePathFlags(c.Flags()); err != nil {
				return err
			}
			c.SetContext(logflags.Context(c.Context(), "drakit"))
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })
	logging.AddFlags(root.PersistentFlags())
	_ = root.RegisterFlagCompletionFunc("logging-format", cobra.FixedCompletions(logflags.Formats, cobra.ShellCompDirectiveNoFileComp)) // bound above
	root.AddCommand(groups...)
	return root
}
