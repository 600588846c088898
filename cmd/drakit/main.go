// Command drakit is the kit's command line: the local cluster, the hardware
// emulator, the reference driver's deployment and the conformance runner.
// newRootCommand wires every command group (commandGroups); every
// subcommand only maps flags onto a library Config and calls its Run.
//
// Every subcommand has the Kubernetes component conventions: the logging
// flags of component-base (-v, --vmodule, --logging-format) on the root,
// applied before the subcommand runs, which finds the contextual logger
// (klog.FromContext) in cmd.Context(); the usual client flags (kubeflags.go)
// where it talks to a cluster; drakit version; and shell completion (drakit
// completion bash|zsh|fish|powershell).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/internal/logflags"
)

// exitError ends drakit with its code. A verdict's (bare) is printed as
// it is: the line the summary above it ends with.
type exitError struct {
	code int
	err  error
	bare bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a usage error's: bad flags or arguments, input that does
// not load or validate (report.ExitUsage).
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: report.ExitUsage, err: err}
}

// usageArgs makes the errors of an argument check usage errors.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error { return usageError(check(cmd, args)) }
}

// exitCode is the exit code of err and the message to print: 0 for none,
// an exitError's, or 1 for any other error.
func exitCode(err error) (int, string) {
	var e *exitError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &e) && e.bare:
		return e.code, e.Error()
	case errors.As(err, &e):
		return e.code, "drakit: " + e.Error()
	}
	return 1, "drakit: " + err.Error()
}

// commandGroups are drakit's command groups, each made by a plain
// constructor: the one place that wires the command line.
func commandGroups() []*cobra.Command {
	return []*cobra.Command{
		newEnvCommand(),
		newImagesCommand(),
		newEmulatorCommand(),
		newDriverCommand(),
		newNICDriverCommand(),
		newCPUDriverCommand(),
		newTPUDriverCommand(),
		newPlainDriverCommand(),
		newConformanceCommand(),
		newExplainCommand(),
		newAllocateCommand(),
		newInterposeCommand(),
		newBenchCommand(),
		newVersionCommand(),
	}
}

// newRootCommand returns drakit with every command group.
func newRootCommand() *cobra.Command {
	logging := logflags.New()
	root := &cobra.Command{
		Use:   "drakit",
		Short: "Conformance kit for Kubernetes Dynamic Resource Allocation, with emulated hardware",
		Long: `drakit certifies DRA drivers against the Kubernetes 1.37 KEPs.

It runs a real single-node Kubernetes cluster as local processes, emulates
accelerator hardware (sysfs, devfs, procfs and an NVML library), deploys the
reference DRA driver and runs Gherkin conformance features against any driver.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Every subcommand's: the logging flags are applied and the
		// command's context carries the logger.
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			if err := logging.Apply(); err != nil {
				return usageError(err)
			}
			if err := absolutePathFlags(c.Flags()); err != nil {
				return err
			}
			c.SetContext(logflags.Context(c.Context(), "drakit"))
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	logging.AddFlags(root.PersistentFlags())
	_ = root.RegisterFlagCompletionFunc("logging-format", cobra.FixedCompletions(logflags.Formats, cobra.ShellCompDirectiveNoFileComp)) // bound above
	root.AddCommand(commandGroups()...)
	return root
}

func main() {
	root := newRootCommand()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := root.ExecuteContext(ctx)
	klog.Flush()
	if code, msg := exitCode(err); code != 0 {
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(code)
	}
}
