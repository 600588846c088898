package emulator

import (
	"errors"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/emulator/nri"
)

// newEmulatorNRIPluginCommand is "drakit emulator nri-plugin": the
// emulator's containerd NRI plugin, launched by containerd.
func newEmulatorNRIPluginCommand() *cobra.Command {
	var p nri.Plugin
	cmd := &cobra.Command{
		Use:   "nri-plugin --root DIR",
		Short: "The containerd NRI plugin that gives NVML to every container with an emulated GPU (containerd launches it)",
		Long: `nri-plugin gives every container that containerd creates with an emulated
GPU's device node (/dev/nvidia<minor>, character major 195) what a real
node's container stack gives it: the NVML library (the emulator's shim) at
/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 and the emulated driver's state
at /run/drakit-emulator, both read-only, unless the container mounts them
already. A DRA driver whose CDI edits give only device nodes is then judged
on what NVML shows in its containers, as on a real node.

containerd starts it as a pre-registered NRI plugin (an executable NN-name in
its NRI plugin_path) and hands it its connection in NRI_PLUGIN_SOCKET; it runs
until containerd closes that connection. drakit's local cluster installs it
on every node with that node's emulator root.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if p.Root == "" {
				return errors.New("--root: required: the node's emulator root")
			}
			return nri.Run(c.Context(), &p)
		},
	}
	cmd.Flags().StringVar(&p.Root, "root", "", "the node's emulator root, rendered by 'drakit emulator render'")
	cmd.Flags().StringVar(&p.ReadyFile, "ready-file", "", "a file written once containerd has registered the plugin (empty: none)")
	return cmd
}
