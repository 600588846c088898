// Package explain is drakit explain: why a ResourceClaim is not allocated,
// from the live cluster's state.
package explain

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/oracle/allocator/live"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

// explainConfig is what drakit explain runs with; flags map 1:1 onto it.
type explainConfig struct {
	// Node restricts the explanation to one node; empty: every Ready,
	// schedulable node.
	Node string
	// FeatureGates are the cluster's enabled feature gates; empty: read
	// from the API server's /metrics.
	FeatureGates []string
	// SaveScenario writes the captured state of the first node (or Node)
	// to this file for drakit allocate -f.
	SaveScenario string
}

func (c explainConfig) validate() error {
	if c.SaveScenario != "" && strings.HasSuffix(c.SaveScenario, "/") {
		return fmt.Errorf("--save-scenario %q: want a file, not a directory", c.SaveScenario)
	}
	return nil
}

// NewCommand returns drakit explain.
func NewCommand() *cobra.Command {
	var cfg explainConfig
	var kube *cli.KubeFlags
	cmd := &cobra.Command{
		Use:   "explain claim|pod NAMESPACE/NAME",
		Short: "Why a ResourceClaim (or a pod's claims) is not allocated, from the live cluster's state",
		Long: `Explain captures the cluster's allocation state (the node, every ResourceSlice
and DeviceClass, the claims in use) and runs drakit's reference allocator on
the claim, or on all claims of the pod together, node by node. Its search is
complete: "does not fit" is proven, with the request, selector, constraint or
counter that stands in the way of each candidate device. When it does fit,
the scheduler has not tried again since devices became free, or gave up on
the search (compare with the pod's events).

The allocator features follow the cluster's feature gates, read from the API
server's /metrics (or given with --feature-gates). --save-scenario writes the
captured state for 'drakit allocate -f', to replay or edit it offline.`,
		Example: `  drakit explain claim default/gpu-claim
  drakit explain pod team-a/trainer-0 --node worker-3 --save-scenario /tmp/trainer.yaml
  drakit allocate -f /tmp/trainer.yaml --compare-upstream`,
		Args:      cobra.ExactArgs(2),
		ValidArgs: []string{"claim", "pod"},
		RunE: func(c *cobra.Command, args []string) error {
			return runExplain(c, cfg, kube, args[0], args[1])
		},
	}
	f := cmd.Flags()
	kube = cli.BindKubeFlags(f)
	kube.Register(cmd)
	f.StringVar(&cfg.Node, "node", cfg.Node, "explain on this node only (default: every Ready, schedulable node)")
	f.StringSliceVar(&cfg.FeatureGates, "feature-gates", cfg.FeatureGates, "the cluster's enabled feature gates, e.g. DRAPrioritizedList,DRAPartitionableDevices (default: the API server's, from /metrics)")
	f.StringVar(&cfg.SaveScenario, "save-scenario", cfg.SaveScenario, "write the captured state of the first node explained to this file (drakit allocate -f replays it)")
	return cmd
}

// parseRef reads NAMESPACE/NAME.
func parseRef(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("%q: want NAMESPACE/NAME", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

func runExplain(c *cobra.Command, cfg explainConfig, flags *cli.KubeFlags, kind, target string) error {
	if kind != "claim" && kind != "pod" {
		return fmt.Errorf("explain %s: want claim or pod", kind)
	}
	ref, err := parseRef(target)
	if err != nil {
		return fmt.Errorf("explain %s %w", kind, err)
	}
	kube, err := flags.ValidatedClient(cfg.validate)
	if err != nil {
		return err
	}
	ctx := c.Context()
	gates := cfg.FeatureGates
	if len(gates) == 0 {
		if gates, err = live.EnabledGates(ctx, kube); err != nil {
			return fmt.Errorf("%w (give them with --feature-gates)", err)
		}
	}
	claims := []types.NamespacedName{ref}
	if kind == "pod" {
		if claims, err = live.PodClaims(ctx, kube, ref); err != nil {
			return err
		}
	}
	ex, err := live.ExplainClaims(ctx, kube, live.FeaturesFromGates(gates), cfg.Node, claims)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprint(c.OutOrStdout(), ex.String()); err != nil {
		return err
	}
	if cfg.SaveScenario == "" {
		return nil
	}
	if len(ex.Nodes) == 0 {
		return errors.New("--save-scenario: nothing was captured (the claims are allocated)")
	}
	data, err := scenario.Marshal(ex.Nodes[0].Scenario)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg.SaveScenario, data, 0o644); err != nil {
		return fmt.Errorf("--save-scenario: %w", err)
	}
	_, err = fmt.Fprintf(c.OutOrStdout(), "the state of node %s is in %s: drakit allocate -f %s\n", ex.Nodes[0].Node, cfg.SaveScenario, cfg.SaveScenario)
	return err
}
