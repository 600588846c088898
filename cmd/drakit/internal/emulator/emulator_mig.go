package emulator

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/emulator/nvml/migctl"
)

// newEmulatorMIGCommand is "drakit emulator mig": --root and --library map
// onto migctl.Config; each subcommand opens one NVML session.
func newEmulatorMIGCommand() *cobra.Command {
	cfg := migctl.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "mig",
		Short: "Manage the MIG state of an emulated node through its NVML shim (like nvidia-smi mig)",
		Long: `mig lists, enables, disables, creates and destroys MIG instances of an
emulator root through NVML, so every change follows the shim's rules and is
seen by the driver and pods at once. Creating needs root (mknod of the
/dev/nvidia-caps nodes). An error that a command gets past (MIG mode off,
instances left) names that command.`,
	}
	cmd.PersistentFlags().StringVar(&cfg.Root, "root", cfg.Root, "emulator root directory")
	cmd.PersistentFlags().StringVar(&cfg.Library, "library", cfg.Library, "NVML library to load; empty: ROOT/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
	if err := cmd.MarkPersistentFlagRequired("root"); err != nil {
		panic(err) // the flag is defined just above
	}
	var gpu int
	// command is how to run another mig subcommand on the same node.
	command := func(sub string) string {
		cmd := "drakit emulator mig " + sub + " --root " + cfg.Root
		if cfg.Library != "" {
			cmd += " --library " + cfg.Library
		}
		return cmd
	}
	// explain adds to an error the command that gets past it.
	explain := func(err error) error {
		var inUse *migctl.InstancesError
		switch {
		case errors.As(err, &inUse):
			destroy := make([]string, len(inUse.GPUInstances))
			for i, gi := range inUse.GPUInstances {
				destroy[i] = fmt.Sprintf("%s --gpu %d --gi %d", command("destroy"), inUse.GPU, gi)
			}
			return fmt.Errorf("%w: %s", err, strings.Join(destroy, "; "))
		case errors.Is(err, migctl.ErrMIGDisabled):
			return fmt.Errorf("%w; enable it first: %s --gpu %d", err, command("enable"), gpu)
		}
		return err
	}
	with := func(f func(c *cobra.Command, s *migctl.Session) error) func(*cobra.Command, []string) error {
		return func(c *cobra.Command, _ []string) (err error) {
			s, err := migctl.Open(cfg)
			if err != nil {
				return err
			}
			defer func() {
				if cerr := s.Close(); err == nil {
					err = cerr
				}
			}()
			return explain(f(c, s))
		}
	}
	gpuFlag := func(c *cobra.Command) {
		c.Flags().IntVar(&gpu, "gpu", 0, "GPU index (NVML order)")
	}

	list := &cobra.Command{
		Use: "list", Short: "List GPUs, their MIG mode and instances", Args: cobra.NoArgs,
		RunE: with(func(c *cobra.Command, s *migctl.Session) error {
			gpus, err := s.List()
			if err != nil {
				return err
			}
			return writeMIGList(c.OutOrStdout(), gpus)
		}),
	}
	mode := func(use string, on bool) *cobra.Command {
		c := &cobra.Command{
			Use: use + " --gpu N", Short: use + " MIG mode of a GPU (no instances may exist to disable it)", Args: cobra.NoArgs,
			RunE: with(func(c *cobra.Command, s *migctl.Session) error {
				if err := s.SetMode(gpu, on); err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "GPU %d: MIG %sd\n", gpu, use)
				return nil
			}),
		}
		gpuFlag(c)
		return c
	}
	var req migctl.CreateRequest
	create := &cobra.Command{
		Use: "create --gpu N --profile GI [--placement START] [--ci-profile CI]", Args: cobra.NoArgs,
		Short: "Create a GPU instance and one compute instance in it (a MIG device)",
		RunE: with(func(c *cobra.Command, s *migctl.Session) error {
			req.GPU = gpu
			gi, err := s.Create(req)
			if err != nil {
				return err
			}
			ci := gi.ComputeInstances[0]
			fmt.Fprintf(c.OutOrStdout(), "GPU %d: created GI %d (%s at %d:%d), CI %d (%s), %s\n",
				gpu, gi.ID, gi.Profile, gi.Start, gi.Size, ci.ID, ci.Profile, ci.UUID)
			return nil
		}),
	}
	gpuFlag(create)
	create.Flags().StringVar(&req.GIProfile, "profile", "", "GPU instance profile name, e.g. 3g.40gb")
	create.Flags().Var(placementFlag{&req.Placement}, "placement", "start memory slice of the GPU instance, 0 or more; omitted: NVML chooses")
	create.Flags().StringVar(&req.CIProfile, "ci-profile", "", "compute instance profile name; empty: the one spanning the GPU instance")
	if err := create.MarkFlagRequired("profile"); err != nil {
		panic(err) // the flag is defined just above
	}
	var gi int
	destroy := &cobra.Command{
		Use: "destroy --gpu N --gi ID", Short: "Destroy a GPU instance and its compute instances", Args: cobra.NoArgs,
		RunE: with(func(c *cobra.Command, s *migctl.Session) error {
			if err := s.Destroy(gpu, gi); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "GPU %d: destroyed GI %d\n", gpu, gi)
			return nil
		}),
	}
	gpuFlag(destroy)
	destroy.Flags().IntVar(&gi, "gi", -1, "GPU instance id")
	if err := destroy.MarkFlagRequired("gi"); err != nil {
		panic(err) // the flag is defined just above
	}
	cmd.AddCommand(list, mode("enable", true), mode("disable", false), create, destroy)
	return cmd
}

// placementFlag is --placement: a start memory slice, 0 or more, or (flag
// not given) nil, which lets NVML choose.
type placementFlag struct{ p **int }

func (f placementFlag) String() string {
	if f.p == nil || *f.p == nil { // pflag asks a zero placementFlag for its default
		return ""
	}
	return strconv.Itoa(**f.p)
}

func (f placementFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return errors.New("a placement is a start memory slice, 0 or more; omit --placement to let NVML choose")
	}
	*f.p = &n
	return nil
}

func (placementFlag) Type() string { return "START" }

func writeMIGList(w io.Writer, gpus []migctl.GPU) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tNAME\tMIG\tGI\tGI PROFILE\tPLACEMENT\tCI\tCI PROFILE\tUUID")
	for _, g := range gpus {
		mig := "n/a"
		if g.MIGCapable {
			mig = map[bool]string{true: "enabled", false: "disabled"}[g.MIGMode]
		}
		if len(g.Instances) == 0 {
			fmt.Fprintf(tw, "%d\t%s\t%s\t-\t-\t-\t-\t-\t%s\n", g.Index, g.Name, mig, g.UUID)
		}
		for _, gi := range g.Instances {
			if len(gi.ComputeInstances) == 0 {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%d:%d\t-\t-\t-\n", g.Index, g.Name, mig, gi.ID, gi.Profile, gi.Start, gi.Size)
			}
			for _, ci := range gi.ComputeInstances {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%d:%d\t%d\t%s\t%s\n", g.Index, g.Name, mig, gi.ID, gi.Profile,
					gi.Start, gi.Size, ci.ID, ci.Profile, ci.UUID)
			}
		}
	}
	return tw.Flush()
}
