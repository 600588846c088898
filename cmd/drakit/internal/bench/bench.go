// Package bench is drakit bench: benchmarks that need a running cluster with drakit's emulated node.
package bench

import (
	"os"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/bench/faultlatency"
	"drakit.dev/drakit/cmd/drakit/internal/cli"
)

// NewCommand returns drakit bench.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks that need a running cluster with drakit's emulated node",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchFaultLatencyCommand())
	return cmd
}

func newBenchFaultLatencyCommand() *cobra.Command {
	cfg := faultlatency.DefaultConfig()
	cfg.EmulatorRoot = os.Getenv("DRAKIT_EMULATOR_ROOT")
	var kube *cli.KubeFlags
	cmd := &cobra.Command{
		Use:   "fault-latency [--runs 20] [--health-xid 94] [--evict-xid 48]",
		Short: "Time from an emulated GPU fault to Unhealthy in the pod's status, the driver's taint and the pod's eviction",
		Long: `fault-latency runs a pod with one GPU of the driver under test, writes an
Xid error into the emulated GPU under it (as 'drakit emulator fault xid'),
and times, from that write, (a) the pod's status showing the device
Unhealthy (KEP-4680) and (b) the driver's ResourceSlice carrying a
NoSchedule taint on the device, resets the GPU, writes a second Xid and
times (c) the NoExecute taint (KEP-5055) and (d) the device taint manager
evicting the pod; then it deletes the pod and claim. It prints each run and
p50/max per stage.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cfg.Validate(); err != nil {
				return err
			}
			cs, err := kube.Client()
			if err != nil {
				return err
			}
			res, err := faultlatency.Run(c.Context(), cs, cfg, c.ErrOrStderr())
			res.Summary(c.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	kube = cli.BindKubeFlags(f)
	kube.Register(cmd)
	f.StringVar(&cfg.EmulatorRoot, "emulator-root", cfg.EmulatorRoot, "the node's emulator root ($DRAKIT_EMULATOR_ROOT)")
	f.StringVar(&cfg.Driver, "driver", cfg.Driver, "the GPU driver under test")
	f.StringVar(&cfg.DeviceClass, "device-class", cfg.DeviceClass, "DeviceClass of its whole GPUs")
	f.StringVar(&cfg.UUIDAttribute, "uuid-attribute", cfg.UUIDAttribute, "attribute holding a GPU's UUID")
	f.StringVar(&cfg.Namespace, "namespace", cfg.Namespace, "namespace of the benchmark's claims and pods (created when missing)")
	f.StringVar(&cfg.Image, "image", cfg.Image, "image of the benchmark's pods (must already be on the node)")
	f.Uint64Var(&cfg.HealthXid, "health-xid", cfg.HealthXid, "Xid the driver answers with Unhealthy and a NoSchedule taint (times the pod's health and that taint)")
	f.Uint64Var(&cfg.EvictXid, "evict-xid", cfg.EvictXid, "Xid the driver answers with a NoExecute taint (times that taint and the eviction)")
	f.IntVar(&cfg.Runs, "runs", cfg.Runs, "number of injections")
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "bound of each stage of each run")
	return cmd
}
