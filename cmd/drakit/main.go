// Command drakit is the kit's command line: the cluster environment, the
// hardware emulator, the reference drivers' deployment and the conformance
// runner.
//
// Every command group is a package of its own under internal/ with a plain
// constructor; newRootCommand lists them all, the one place that wires the
// command line. Every subcommand only maps flags onto a library Config and
// calls its Run. What the groups share (the root's logging flags and
// conventions, exit codes, the Kubernetes client flags, path flags) is
// package internal/cli.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/cmd/drakit/internal/allocate"
	"drakit.dev/drakit/cmd/drakit/internal/bench"
	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/cmd/drakit/internal/conformance"
	"drakit.dev/drakit/cmd/drakit/internal/driver"
	"drakit.dev/drakit/cmd/drakit/internal/emulator"
	"drakit.dev/drakit/cmd/drakit/internal/env"
	"drakit.dev/drakit/cmd/drakit/internal/explain"
	"drakit.dev/drakit/cmd/drakit/internal/images"
	"drakit.dev/drakit/cmd/drakit/internal/interpose"
	"drakit.dev/drakit/cmd/drakit/internal/version"
)

// gitVersion is drakit's version as scripts/build.sh stamps it
// (-ldflags -X main.gitVersion=$(git describe --always --dirty)); empty in
// a plain go build, where the module's version from the build info stands
// in.
var gitVersion string

// newRootCommand returns drakit with every command group.
func newRootCommand() *cobra.Command {
	return cli.NewRoot(
		env.NewCommand(),
		images.NewCommand(),
		emulator.NewCommand(),
		driver.NewDriverCommand(),
		conformance.NewCommand(),
		explain.NewCommand(),
		allocate.NewCommand(),
		interpose.NewCommand(),
		bench.NewCommand(),
		version.NewCommand(gitVersion),
	)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCommand().ExecuteContext(ctx)
	klog.Flush()
	if code, msg := cli.ExitCode(err); code != 0 {
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(code)
	}
}
