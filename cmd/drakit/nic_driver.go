package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/reference/deploy"
)

func init() { register(newNICDriverCommand) }

// bindNICDriverFlags maps every field of deploy.NICOptions onto a flag; the
// paths default to $DRAKIT_* (as drakit cluster status -o env prints them)
// when set.
func bindNICDriverFlags(fs *pflag.FlagSet, o *deploy.NICOptions) {
	o.KubeletRootDir = envOr("DRAKIT_KUBELET_ROOT_DIR", o.KubeletRootDir)
	o.CDIDir = envOr("DRAKIT_CDI_DIR", o.CDIDir)
	o.HostRoot = envOr("DRAKIT_EMULATOR_ROOT", o.HostRoot)
	fs.StringVar(&o.DriverName, "driver-name", o.DriverName, "DRA driver name, also the PF shares' DeviceClass name (the VFs' is vf.<name>)")
	fs.StringVar(&o.Image, "image", o.Image, "driver image, the reference driver's (never pulled: it must be on the node)")
	fs.StringVar(&o.KubeletRootDir, "kubelet-root-dir", o.KubeletRootDir, "the kubelet's --root-dir on the node ($DRAKIT_KUBELET_ROOT_DIR)")
	fs.StringVar(&o.CDIDir, "cdi-dir", o.CDIDir, "the container runtime's CDI spec directory on the node ($DRAKIT_CDI_DIR)")
	fs.StringVar(&o.HostRoot, "host-root", o.HostRoot, "the emulator root on the node, whose sys/ the driver reads and writes ($DRAKIT_EMULATOR_ROOT)")
	fs.IntVar(&o.VFsPerPF, "vfs-per-pf", o.VFsPerPF, "VFs published per PF (created when the first is prepared)")
	fs.StringVar(&o.APIServerHost, "apiserver-host", o.APIServerHost, "KUBERNETES_SERVICE_HOST of the hostNetwork driver pod (empty: keep the kubelet's)")
	fs.IntVar(&o.APIServerPort, "apiserver-port", o.APIServerPort, "KUBERNETES_SERVICE_PORT of the hostNetwork driver pod (0 with an empty host)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long deploy waits for the driver to be ready, and delete for it to go")
}

func newNICDriverCommand() *cobra.Command {
	opts := deploy.DefaultNICOptions()
	kubeconfig := os.Getenv("DRAKIT_KUBECONFIG")
	cmd := &cobra.Command{
		Use:   "nic-driver",
		Short: "Deploy or delete the NIC DRA driver (SR-IOV VFs, PF bandwidth shares, device status)",
		Long: `Deploys drakit's NIC DRA driver, nic.drakit.dev by default
(reference/nicdriver), from the manifests in reference/deploy/manifests/nic,
in namespace drakit-nic beside the reference driver, from the reference
driver's image. It discovers SR-IOV NICs in <host-root>/sys, publishes each
PF's bandwidth as consumable capacity (DeviceClass <driver-name>) and its VFs
(DeviceClass vf.<driver-name>), creates VFs through sriov_numvfs when one is
prepared, and writes the claims' status.devices. The pod has no capability; it
mounts the kubelet plugin directories, the CDI directory and the emulator's
sysfs (writable: VFs are created through it). Its cluster role lets it write
status.devices only for its own driver name on its own node
(associated-node:patch on resourceclaims/driver), and a
ValidatingAdmissionPolicy limits it to the ResourceSlices of its own node.`,
	}
	bindNICDriverFlags(cmd.PersistentFlags(), &opts)
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", kubeconfig,
		"kubeconfig of the cluster ($DRAKIT_KUBECONFIG; empty: $KUBECONFIG or ~/.kube/config)")

	// connect validates the options, so that bad flags are reported before
	// the kubeconfig is read, and returns a client of the cluster.
	connect := func() (kubernetes.Interface, error) { return validatedClient(opts.Validate, kubeconfig) }
	cmd.AddCommand(&cobra.Command{
		Use:   "deploy",
		Short: "Create or update the NIC driver and wait until it runs and has published its ResourceSlice",
		Example: `  eval "$(drakit cluster status -o env)"
  drakit nic-driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
    --cdi-dir "$DRAKIT_CDI_DIR" --host-root "$DRAKIT_EMULATOR_ROOT"`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cs, err := connect()
			if err != nil {
				return err
			}
			return deploy.ApplyNIC(c.Context(), cs, opts)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "delete",
		Short: "Delete the NIC driver and its ResourceSlices (succeeds when nothing is deployed)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cs, err := connect()
			if err != nil {
				return err
			}
			return deploy.DeleteNIC(c.Context(), cs, opts)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "manifests",
		Short: "Print the manifests deploy would apply, as YAML",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			m, err := deploy.NICObjects(opts)
			if err != nil {
				return err
			}
			return printObjects(c.OutOrStdout(), m.List())
		},
	})
	return cmd
}
