package emulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/emulator/clusterprofile"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
	"drakit.dev/drakit/internal/tpuhw"
)

// errRenderFlags is returned for a render command line that names no node,
// or two.
var errRenderFlags = errors.New("invalid render flags")

// renderConfig is what drakit emulator render does: one node profile, one
// node of a cluster profile, or every node of one.
type renderConfig struct {
	Profile        string
	UUIDSeed       string
	ClusterProfile string
	Node           string
	All            bool
	Out            string
	Options        render.Options
}

func (c renderConfig) validate() error {
	switch {
	case (c.Profile == "") == (c.ClusterProfile == ""):
		return fmt.Errorf("%w: give exactly one of --profile and --cluster-profile", errRenderFlags)
	case c.Profile != "" && (c.Node != "" || c.All || c.Out != ""):
		return fmt.Errorf("%w: --node, --all and --out go with --cluster-profile", errRenderFlags)
	case c.ClusterProfile != "" && c.UUIDSeed != "":
		return fmt.Errorf("%w: --uuid-seed goes with --profile (a cluster profile seeds each node with its name)", errRenderFlags)
	case c.ClusterProfile != "" && c.All == (c.Node != ""):
		return fmt.Errorf("%w: --cluster-profile needs exactly one of --node and --all", errRenderFlags)
	case c.All && (c.Out == "" || c.Options.Root != ""):
		return fmt.Errorf("%w: --all writes under --out DIR, not --root", errRenderFlags)
	case !c.All && c.Options.Root == "":
		return fmt.Errorf("%w: --root is required", errRenderFlags)
	}
	return nil
}

func runRender(ctx context.Context, cfg renderConfig, out io.Writer) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	if cfg.Profile != "" {
		p, err := profile.LoadSeeded(cfg.Profile, cfg.UUIDSeed)
		if err != nil {
			return err
		}
		if err := render.Render(ctx, p, cfg.Options); err != nil {
			return err
		}
		fmt.Fprintf(out, "rendered %s (%s) into %s\n", p.Metadata.Name, summary(p), cfg.Options.Root)
		return nil
	}
	c, err := loadCluster(cfg.ClusterProfile)
	if err != nil {
		return err
	}
	if cfg.All {
		took, size, err := clusterprofile.RenderAll(ctx, c, cfg.Out, cfg.Options)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "rendered %d nodes of %s into %s in %s, %.1f MiB of files\n",
			len(c.Nodes), c.Name, cfg.Out, took.Round(1e6), float64(size)/(1<<20))
		return nil
	}
	if err := clusterprofile.RenderNode(ctx, c, cfg.Node, cfg.Options); err != nil {
		return err
	}
	n, _ := c.Node(cfg.Node)
	fmt.Fprintf(out, "rendered node %s of %s (%s) into %s\n", n.Name, c.Name, summary(n.Profile), cfg.Options.Root)
	return nil
}

func loadCluster(nameOrPath string) (*clusterprofile.Cluster, error) {
	src, err := clusterprofile.Load(nameOrPath)
	if err != nil {
		return nil, err
	}
	return clusterprofile.Resolve(src)
}

func newEmulatorClusterProfileCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster-profile",
		Short: "Cluster profiles: which nodes, racks, NVLink cliques and TPU slices an emulated cluster has",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the built-in cluster profiles",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			for _, name := range clusterprofile.BuiltinNames() {
				cl, err := loadCluster(name)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "%s\t%s\n", name, clusterSummary(cl))
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "show NAME|FILE",
		Short: "Print a cluster profile's nodes (group, rack, hardware, clique, slice), cliques and slices",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := loadCluster(args[0])
			if err != nil {
				return err
			}
			return writeCluster(c.OutOrStdout(), cl)
		},
	}, &cobra.Command{
		Use:   "check NAME|FILE",
		Short: "Validate a cluster profile and every node's profile; lists every problem with its field path",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := loadCluster(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: valid (%s)\n", args[0], clusterSummary(cl))
			return nil
		},
	})
	return cmd
}

// clusterSummary is one line: "4 nodes, 16 GPUs, 16 TPU chips, 2 cliques, 1 slice, 1 rack".
func clusterSummary(c *clusterprofile.Cluster) string {
	gpus, chips := 0, 0
	racks := map[string]bool{}
	for _, n := range c.Nodes {
		gpus += len(n.Profile.Spec.GPUs)
		if t := n.Profile.Spec.TPU; t != nil {
			if b, err := tpuhw.ParseBounds(t.ChipBounds); err == nil {
				chips += b.Chips()
			}
		}
		if n.Rack != "" {
			racks[n.Rack] = true
		}
	}
	return fmt.Sprintf("%d nodes, %d GPUs, %d TPU chips, %d racks, %d NVLink cliques, %d TPU slices",
		len(c.Nodes), gpus, chips, len(racks), len(c.Cliques), len(c.Slices))
}

func writeCluster(w io.Writer, c *clusterprofile.Cluster) error {
	fmt.Fprintf(w, "Cluster profile %s: %s\n\nNodes:\n", c.Name, clusterSummary(c))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tGROUP\tRACK\tNODE PROFILE\tGPUS\tNVLINK CLIQUE\tTPU SLICE/WORKER")
	for _, n := range c.Nodes {
		clique, slice := "-", "-"
		if nv := n.Profile.Spec.NVLink; nv != nil && nv.Domain != nil {
			clique = fmt.Sprintf("%s.%d", nv.Domain.ClusterUUID, nv.Domain.CliqueID)
		}
		if t := n.Profile.Spec.TPU; t != nil && t.Slice != nil {
			slice = fmt.Sprintf("%s/%d", t.Slice.Name, t.Slice.WorkerID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", n.Name, n.Group, orDash(n.Rack), n.Profile.Metadata.Name, len(n.Profile.Spec.GPUs), clique, slice)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(c.Cliques) > 0 {
		fmt.Fprintln(w, "\nNVLink cliques:")
		for _, cl := range c.Cliques {
			fmt.Fprintf(w, "  %s (domain %s): %s\n", cl.Identity(), cl.Domain, strings.Join(cl.Nodes, ", "))
		}
	}
	if len(c.Slices) > 0 {
		fmt.Fprintln(w, "\nTPU slices:")
		for _, s := range c.Slices {
			fmt.Fprintf(w, "  %s: %s %s, hosts of %s in worker order: %s\n", s.Name, s.Generation, s.Geometry.Topology, s.Geometry.ChipBounds, strings.Join(s.Hosts, ", "))
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
