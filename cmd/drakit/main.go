// Command drakit is the kit's command line: the local cluster, the hardware
// emulator, the reference driver's deployment and the conformance runner.
// Each subcommand lives in its own file and registers itself in init; every
// subcommand only maps flags onto a library Config and calls its Run.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// subcommands is filled by the init functions of this package's files.
var subcommands []func() *cobra.Command

func register(c func() *cobra.Command) { subcommands = append(subcommands, c) }

func main() {
	root := &cobra.Command{
		Use:   "drakit",
		Short: "Conformance kit for Kubernetes Dynamic Resource Allocation, with emulated hardware",
		Long: `drakit certifies DRA drivers against the Kubernetes 1.37 KEPs.

It runs a real single-node Kubernetes cluster as local processes, emulates
accelerator hardware (sysfs, devfs, procfs and an NVML library), deploys the
reference DRA driver and runs Gherkin conformance features against any driver.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range subcommands {
		root.AddCommand(c())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "drakit:", err)
		os.Exit(1)
	}
}
