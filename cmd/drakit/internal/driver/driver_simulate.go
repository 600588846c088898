package driver

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/reference/simulate"
)

// bindSimulateFlags maps every field of simulate.Config onto a flag;
// the kubeconfig defaults to $DRAKIT_KUBECONFIG when set. It returns the
// client flags (--kubeconfig, --context, --request-timeout), bound to
// cfg's.
func bindSimulateFlags(fs *pflag.FlagSet, cfg *simulate.Config) *cli.KubeFlags {
	cfg.Kubeconfig = cli.EnvOr("DRAKIT_KUBECONFIG", cfg.Kubeconfig)
	fs.StringVar(&cfg.DriverName, "driver-name", cfg.DriverName, "DRA driver the slices are published for")
	fs.StringVar(&cfg.Profile, "profile", cfg.Profile, "every node's hardware: a built-in emulator profile (dgx-h100, mixed-mig) or a profile file")
	fs.StringVar(&cfg.ClusterProfile, "cluster-profile", cfg.ClusterProfile,
		"the nodes of a cluster profile (built-in: conformance-fabric, nvl72, tpu-v5p-4x4x4, scale-1000; or a file), each with its own hardware, "+
			"with the NVLink attributes, the cliques' IMEX channel pools and the TPU chips and sub-slice pools; replaces --profile, --nodes, --node-prefix")
	fs.IntVar(&cfg.GPUsPerNode, "gpus-per-node", cfg.GPUsPerNode, "replicate the profile's GPUs to this many per node (0: the profile's GPUs)")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "number of simulated nodes")
	fs.StringVar(&cfg.NodePrefix, "node-prefix", cfg.NodePrefix, "simulated nodes are <prefix><i>; no real Node may have such a name")
	fs.BoolVar(&cfg.PartitionableAlpha, "partitionable-alpha", cfg.PartitionableAlpha,
		"publish the alpha fields of partitionable devices (partitionTypeAttribute of KEP-4815, gate DRAPartitionableDevicesType; compatibility groups of KEP-5963)")
	fs.BoolVar(&cfg.Keep, "keep", cfg.Keep, "leave the slices in the cluster (a later run without --keep deletes them)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "how long publishing, and deleting, may take each")
	kube := cli.BindKubeFlagsTo(fs, &cfg.Kubeconfig, &cfg.KubeContext, &cfg.RequestTimeout, cli.KubeconfigUsage)
	fs.IntVar(&cfg.QPS, "qps", cfg.QPS, "client-side requests per second of each simulated node's publisher")
	fs.IntVar(&cfg.Burst, "burst", cfg.Burst, "client-side request burst of each simulated node's publisher")
	return kube
}

func newDriverSimulateCommand() *cobra.Command {
	cfg := simulate.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "simulate ([--nodes N] [--profile dgx-h100|mixed-mig|FILE] [--gpus-per-node N] | --cluster-profile NAME|FILE) [--keep]",
		Short: "Publish the driver's ResourceSlices for many simulated nodes and time it",
		Long: `Simulate runs the reference driver's ResourceSlice publisher (the
resourceslice controller the kubelet plugin uses, one per node) for --nodes
simulated nodes, each with the hardware of --profile as the driver would
publish it, waits until the API server holds every slice, prints the times,
and deletes the slices again unless --keep is given.

A simulated node's pool is named after the node and selects it with
spec.nodeSelector (matchFields metadata.name) rather than spec.nodeName: the
publisher sets nodeName only on slices owned by their Node, and the garbage
collector deletes slices whose owner does not exist. No Node objects are
created, so no pod is ever scheduled to a simulated node. Each simulated
node's publisher has its own client (--qps, --burst: client-go's defaults,
which the reference driver runs with) of the cluster of --kubeconfig and
--context, each request bounded by --request-timeout, as kubectl's. Every
publisher's watch selects slices without a node name, which the API server's
watch cache does not index, so each slice event reaches every publisher: the
API server works harder than with real nodes and the times are an upper
bound.

With --cluster-profile the simulated nodes are a cluster profile's (see
'drakit emulator cluster-profile show'), and what is published follows the
fabric contract: the GPUs of a clique's nodes carry gpu.drakit.dev/
nvlinkClusterUUID and nvlinkClique; each clique has an IMEX channel pool
imex-<cliqueID>-<uuid prefix> (driver --driver-name, devices channel-<N>)
selecting the clique's nodes; each TPU host has a pool of chips (driver
tpu.drakit.dev, chip-<i> with torus coordinates), and each TPU slice a
sub-slice pool slice-<name> with per-device node selection and one counter
per host, so overlapping sub-slices are never allocated together.`,
		Example: `  drakit driver simulate --kubeconfig "$DRAKIT_KUBECONFIG" --nodes 1000 --profile dgx-h100
  drakit driver simulate --context staging --request-timeout 30s --nodes 100
  drakit driver simulate --nodes 1000 --profile mixed-mig
  drakit driver simulate --nodes 1 --profile reference/simulate/testdata/a100-dynamic-mig.yaml --gpus-per-node 64
  drakit driver simulate --cluster-profile scale-1000`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if cfg.ClusterProfile != "" {
				for _, f := range []string{"profile", "nodes", "node-prefix", "gpus-per-node"} {
					if c.Flags().Changed(f) {
						return fmt.Errorf("%w: --%s does not go with --cluster-profile, whose nodes have their own names and hardware", simulate.ErrInvalidConfig, f)
					}
				}
			}
			_, err := simulate.Run(c.Context(), cfg, c.OutOrStdout())
			return err
		},
	}
	// Its own client flags, not the driver command's persistent ones of
	// the same names.
	bindSimulateFlags(cmd.Flags(), &cfg).Register(cmd)
	return cmd
}
