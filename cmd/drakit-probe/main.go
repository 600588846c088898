// Command drakit-probe runs inside the conformance kit's test pods. It prints
// one line "DRAKIT-PROBE-REPORT <json>" describing the device nodes,
// environment and NVML GPUs the container sees (package
// drakit.dev/drakit/conformance/probe), and with --hold then waits for
// SIGTERM or SIGINT and exits 0, so that the kit can inspect the running pod
// and delete it without waiting for the grace period.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"drakit.dev/drakit/conformance/probe"
)

func main() {
	opts := probe.DefaultOptions()
	hold := flag.Bool("hold", false, "after printing the report, wait for SIGTERM or SIGINT, then exit 0")
	flag.StringVar(&opts.DevRoot, "dev-root", opts.DevRoot, "directory scanned for device nodes (reported as "+probe.DevPath+")")
	flag.Parse()
	if err := run(opts, *hold); err != nil {
		fmt.Fprintln(os.Stderr, "drakit-probe:", err)
		os.Exit(1)
	}
}

func run(opts probe.Options, hold bool) error {
	// Register for the signals before printing, so that a kit that deletes
	// the pod right after reading the report never hits the default action.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	report, err := probe.Collect(ctx, opts)
	if err != nil {
		return err
	}
	line, err := probe.Format(report)
	if err != nil {
		return err
	}
	if _, err := fmt.Println(line); err != nil {
		return fmt.Errorf("print report: %w", err)
	}
	if hold {
		<-ctx.Done()
	}
	return nil
}
