// Package emulator is drakit emulator: node and cluster profiles, the
// rendered hardware, faults, MIG, SR-IOV, the watcher, the NVML shim and the
// NRI plugin.
package emulator

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/emulator/clusterprofile"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

// NewCommand returns drakit emulator.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "emulator",
		Short: "Emulated accelerator hardware: node profiles and the sysfs/devfs/procfs/NVML tree they render to",
	}
	cmd.AddCommand(newEmulatorRenderCommand(), newEmulatorProfilesCommand(), newEmulatorShowCommand(),
		newEmulatorValidateCommand(), newEmulatorBuildShimCommand(), newEmulatorShimFunctionsCommand(),
		newEmulatorMIGCommand(), newEmulatorExecCommand(), newEmulatorSRIOVCommand(), newEmulatorWatchCommand(),
		newEmulatorLinkCommand(), newEmulatorVFRemoveCommand(), newEmulatorFaultCommand(),
		newEmulatorClusterProfileCommand(), newEmulatorNRIPluginCommand())
	return cmd
}

func newEmulatorRenderCommand() *cobra.Command {
	var cfg renderConfig
	cfg.Options = render.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "render (--profile NAME|FILE [--uuid-seed SEED] | --cluster-profile NAME|FILE (--node NODE | --all --out DIR)) --root DIR [--shim PATH [--nvidia-smi PATH]]",
		Short: "Write a node profile's hardware under an emulator root (needs root for the device nodes)",
		Long: `Render writes the node's sysfs, device nodes, /proc files and NVML state under
the root directory, and installs the NVML shim when --shim is given, with the
emulator's nvidia-smi (from beside the shim, where build-shim writes it, or
--nvidia-smi) as ROOT/usr/bin/nvidia-smi. The root must be new, empty, or
rendered before; rendering again replaces it. --uuid-seed replaces the
profile's spec.uuidSeed, from which the GPU UUIDs and NIC MACs it does not
spell out are derived: give each node of a multi-node cluster its own (its
node name) so that no two nodes have the same GPU UUID.

With --cluster-profile the node's hardware is node --node of a cluster
profile (see 'drakit emulator cluster-profile show'): its node profile with
the node's name as UUID seed, its NVLink clique and TPU slice. --all renders
every node of the cluster profile under DIR/<node>/ and prints the time and
disk use.`,
		Example: `  drakit emulator render --profile dgx-h100 --root /tmp/emu
  drakit emulator render --cluster-profile conformance-fabric --node 127.0.0.2 --root /tmp/emu-2
  drakit emulator render --cluster-profile scale-1000 --all --out /tmp/scale`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runRender(c.Context(), cfg, c.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&cfg.Profile, "profile", "", cli.ProfileFlagUsage)
	cmd.Flags().StringVar(&cfg.UUIDSeed, "uuid-seed", "", "with --profile: seed of the derived GPU UUIDs and NIC MACs instead of the profile's spec.uuidSeed (one per node: the node name)")
	cmd.Flags().StringVar(&cfg.ClusterProfile, "cluster-profile", "", cli.ClusterProfileFlagUsage)
	cmd.Flags().StringVar(&cfg.Node, "node", "", "with --cluster-profile: the node to render")
	completeProfiles(cmd)
	cmd.Flags().BoolVar(&cfg.All, "all", false, "with --cluster-profile: render every node under --out/<node>/")
	cmd.Flags().StringVar(&cfg.Out, "out", "", "with --all: directory of the nodes' emulator roots")
	cmd.Flags().StringVar(&cfg.Options.Root, "root", cfg.Options.Root, "emulator root directory to render into")
	cmd.Flags().StringVar(&cfg.Options.ShimLibrary, "shim", cfg.Options.ShimLibrary, "built NVML shim to install as libnvidia-ml.so.<driverVersion> (see build-shim); empty: no library")
	cmd.Flags().StringVar(&cfg.Options.NvidiaSMI, "nvidia-smi", cfg.Options.NvidiaSMI, "built nvidia-smi to install as usr/bin/nvidia-smi (see build-shim); empty: nvidia-smi beside --shim, none without --shim")
	return cmd
}

func newEmulatorProfilesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "profiles",
		Short: "List the built-in node profiles",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			for _, name := range profile.BuiltinNames() {
				p, err := profile.Builtin(name)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "%s\t%s\n", name, summary(p))
			}
			return nil
		},
	}
}

func newEmulatorShowCommand() *cobra.Command {
	var profileName string
	cmd := &cobra.Command{
		Use:   "show --profile NAME|FILE",
		Short: "Print a node profile as YAML with every default filled in",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p, err := profile.Load(profileName)
			if err != nil {
				return err
			}
			return writeProfile(c.OutOrStdout(), p)
		},
	}
	cmd.Flags().StringVar(&profileName, "profile", "", cli.ProfileFlagUsage)
	if err := cmd.MarkFlagRequired("profile"); err != nil {
		panic(err) // the flag is defined just above
	}
	completeProfiles(cmd)
	return cmd
}

func newEmulatorValidateCommand() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "validate -f FILE",
		Short: "Check a node profile file; lists every problem with its field path",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p, err := profile.LoadFile(file)
			var verr *profile.ValidationError
			if errors.As(err, &verr) {
				for _, fe := range verr.Errs {
					fmt.Fprintln(c.OutOrStdout(), fe.Error())
				}
				return fmt.Errorf("%s: %d problem(s)", file, len(verr.Errs))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: valid (%s)\n", file, summary(p))
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "node profile YAML file")
	if err := cmd.MarkFlagRequired("file"); err != nil {
		panic(err) // the flag is defined just above
	}
	return cmd
}

func writeProfile(w io.Writer, p *profile.Profile) error {
	out, err := yaml.Marshal(p)
	if err != nil {
		return fmt.Errorf("marshal profile %s: %w", p.Metadata.Name, err)
	}
	_, err = w.Write(out)
	return err
}

// summary describes a profile in one line: "8× NVIDIA H100 80GB HBM3, 8×
// ConnectX-7, 2 NUMA nodes, 2 root complexes, driver 570.172.08".
func summary(p *profile.Profile) string {
	var parts []string
	counts := map[string]int{}
	var names []string
	for _, g := range p.Spec.GPUs {
		if counts[g.Name] == 0 {
			names = append(names, g.Name)
		}
		counts[g.Name]++
	}
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%d× %s", counts[n], n))
	}
	if len(names) == 0 && p.Spec.TPU == nil {
		parts = append(parts, "no GPUs")
	}
	if h := p.Spec.TPU; h != nil {
		tpu := fmt.Sprintf("%d× TPU %s (%s)", len(h.Chips), h.Generation, h.ChipBounds)
		if h.Slice != nil {
			tpu += fmt.Sprintf(", worker %d of slice %s (%s)", h.Slice.WorkerID, h.Slice.Name, h.Slice.Topology)
		}
		parts = append(parts, tpu)
	}
	nics := map[string]int{}
	var nicNames []string
	for _, n := range p.Spec.NICs {
		name := n.Model
		if name == "" {
			name = fmt.Sprintf("NIC %04x:%04x", uint32(n.VendorID), uint32(n.DeviceID))
		}
		if nics[name] == 0 {
			nicNames = append(nicNames, name)
		}
		nics[name]++
	}
	for _, n := range nicNames {
		parts = append(parts, fmt.Sprintf("%d× %s", nics[n], n))
	}
	parts = append(parts, fmt.Sprintf("%d NUMA nodes", len(p.Spec.NUMANodes)),
		fmt.Sprintf("%d root complexes", len(p.Spec.RootComplexes)),
		"driver "+p.Spec.Driver.DriverVersion)
	return strings.Join(parts, ", ")
}

// completeProfiles completes cmd's --profile with the built-in node
// profiles and its --cluster-profile (where it has one) with the built-in
// cluster profiles; both also take a file.
func completeProfiles(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("profile", cobra.FixedCompletions(profile.BuiltinNames(), cobra.ShellCompDirectiveDefault))
	if cmd.Flags().Lookup("cluster-profile") != nil {
		_ = cmd.RegisterFlagCompletionFunc("cluster-profile", cobra.FixedCompletions(clusterprofile.BuiltinNames(), cobra.ShellCompDirectiveDefault))
	}
}
