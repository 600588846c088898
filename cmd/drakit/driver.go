package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/reference/deploy"
)

func init() { register(newDriverCommand) }

// bindDriverFlags maps every field of deploy.Options onto a flag; the paths
// default to $DRAKIT_* (as drakit cluster status -o env prints them) when set.
func bindDriverFlags(fs *pflag.FlagSet, o *deploy.Options) {
	o.KubeletRootDir = envOr("DRAKIT_KUBELET_ROOT_DIR", o.KubeletRootDir)
	o.CDIDir = envOr("DRAKIT_CDI_DIR", o.CDIDir)
	o.DriverRoot = envOr("DRAKIT_EMULATOR_ROOT", o.DriverRoot)
	fs.StringVar(&o.DriverName, "driver-name", o.DriverName, "DRA driver name, also the DeviceClass name")
	fs.StringVar(&o.Image, "image", o.Image, "driver image (never pulled: it must be on the node)")
	fs.StringVar(&o.KubeletRootDir, "kubelet-root-dir", o.KubeletRootDir, "the kubelet's --root-dir on the node ($DRAKIT_KUBELET_ROOT_DIR)")
	fs.StringVar(&o.CDIDir, "cdi-dir", o.CDIDir, "the container runtime's CDI spec directory on the node ($DRAKIT_CDI_DIR)")
	fs.StringVar(&o.DriverRoot, "driver-root", o.DriverRoot, "NVIDIA driver root on the node: the emulator root ($DRAKIT_EMULATOR_ROOT)")
	fs.StringVar(&o.APIServerHost, "apiserver-host", o.APIServerHost, "KUBERNETES_SERVICE_HOST of the hostNetwork driver pod (empty: keep the kubelet's)")
	fs.IntVar(&o.APIServerPort, "apiserver-port", o.APIServerPort, "KUBERNETES_SERVICE_PORT of the hostNetwork driver pod (0 with an empty host)")
	fs.BoolVar(&o.PartitionableAlpha, "partitionable-alpha", o.PartitionableAlpha, "publish partitionTypeAttribute and compatibilityGroups (alpha KEP-5677/5963 gates on)")
	fs.StringVar(&o.RuntimeClassName, "runtime-class-name", o.RuntimeClassName, "RuntimeClass of the driver pods (local cluster: drakit-mig-manager, which lets dynamic MIG read the MIG capability devices unprivileged); empty: the node's default")
	fs.BoolVar(&o.Privileged, "privileged", o.Privileged, "run the driver container privileged, not with least privilege: dynamic MIG needs it under runc's device cgroup")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long deploy waits for the driver to be ready, and delete for it to go")
}

func newDriverCommand() *cobra.Command {
	opts := deploy.DefaultOptions()
	kubeconfig := os.Getenv("DRAKIT_KUBECONFIG")
	cmd := &cobra.Command{
		Use:   "driver",
		Short: "Deploy or delete the reference DRA driver (DaemonSet, RBAC, admission policy, DeviceClasses)",
		Long: `Deploys drakit's reference DRA driver, gpu.drakit.dev by default, from the
manifests in reference/deploy. Every host path (kubelet plugin directories,
CDI directory, driver root) is mounted at the same path inside the driver pod;
system directories (/, /etc, /usr, /var, ...) are refused. The driver runs with
least privilege (no capability but MKNOD, read-only where it only reads) and a
ValidatingAdmissionPolicy limits its service account to the ResourceSlices of
its own node. Creating and destroying dynamic MIG devices also needs read access
to the MIG config capability device, which a container's device cgroup (runc)
refuses: give it with --runtime-class-name drakit-mig-manager on the local
cluster (a runtime that grants exactly the MIG capability devices), or with
--privileged where no such RuntimeClass exists.`,
	}
	bindDriverFlags(cmd.PersistentFlags(), &opts)
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", kubeconfig,
		"kubeconfig of the cluster ($DRAKIT_KUBECONFIG; empty: $KUBECONFIG or ~/.kube/config)")

	// connect validates the options, so that bad flags are reported before
	// the kubeconfig is read, and returns a client of the cluster.
	connect := func() (kubernetes.Interface, error) { return validatedClient(opts.Validate, kubeconfig) }
	cmd.AddCommand(&cobra.Command{
		Use:   "deploy",
		Short: "Create or update the driver and wait until it runs and has published its ResourceSlices",
		Example: `  eval "$(drakit cluster status -o env)"
  drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
    --cdi-dir "$DRAKIT_CDI_DIR" --driver-root "$DRAKIT_EMULATOR_ROOT"`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cs, err := connect()
			if err != nil {
				return err
			}
			return deploy.Apply(c.Context(), cs, opts)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "delete",
		Short: "Delete the driver and its ResourceSlices (succeeds when nothing is deployed)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cs, err := connect()
			if err != nil {
				return err
			}
			return deploy.Delete(c.Context(), cs, opts)
		},
	})
	cmd.AddCommand(newDriverSimulateCommand())
	cmd.AddCommand(&cobra.Command{
		Use:   "manifests",
		Short: "Print the manifests deploy would apply, as YAML",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			m, err := deploy.Objects(opts)
			if err != nil {
				return err
			}
			return printObjects(c.OutOrStdout(), m.List())
		},
	})
	return cmd
}
