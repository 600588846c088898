package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/reference/deploy"
	"drakit.dev/drakit/reference/plaindriver"
)

func init() { register(newPlainDriverCommand) }

// bindPlainDriverFlags maps every field of deploy.PlainOptions onto a flag;
// the paths default to $DRAKIT_* (as drakit cluster status -o env prints
// them) when set, the state directory to $DRAKIT_RUN_DIR/plain-driver.
func bindPlainDriverFlags(fs *pflag.FlagSet, o *deploy.PlainOptions) {
	o.KubeletRootDir = envOr("DRAKIT_KUBELET_ROOT_DIR", o.KubeletRootDir)
	o.CDIDir = envOr("DRAKIT_CDI_DIR", o.CDIDir)
	if run, ok := os.LookupEnv("DRAKIT_RUN_DIR"); ok {
		o.StateDir = filepath.Join(run, "plain-driver")
	}
	known := make([]string, 0, len(plaindriver.Defects()))
	for _, d := range plaindriver.Defects() {
		known = append(known, string(d))
	}
	fs.StringVar(&o.DriverName, "driver-name", o.DriverName, "DRA driver name, also the DeviceClass name")
	fs.StringVar(&o.Image, "image", o.Image, "driver image (never pulled: it must be on the node)")
	fs.StringVar(&o.KubeletRootDir, "kubelet-root-dir", o.KubeletRootDir, "the kubelet's --root-dir on the node ($DRAKIT_KUBELET_ROOT_DIR)")
	fs.StringVar(&o.CDIDir, "cdi-dir", o.CDIDir, "the container runtime's CDI spec directory on the node ($DRAKIT_CDI_DIR)")
	fs.StringVar(&o.StateDir, "state-dir", o.StateDir, "the driver's state directory on the node, mounted into containers per device ($DRAKIT_RUN_DIR/plain-driver)")
	fs.IntVar(&o.Devices, "devices", o.Devices, "number of devices the driver publishes, dev-0 … dev-<n-1>")
	fs.StringVar((*string)(&o.Defect), "defect", string(o.Defect),
		"a deliberate bug for the conformance kit to catch: "+strings.Join(known, ", ")+"; empty: none")
	fs.StringVar(&o.APIServerHost, "apiserver-host", o.APIServerHost, "KUBERNETES_SERVICE_HOST of the hostNetwork driver pod (empty: keep the kubelet's)")
	fs.IntVar(&o.APIServerPort, "apiserver-port", o.APIServerPort, "KUBERNETES_SERVICE_PORT of the hostNetwork driver pod (0 with an empty host)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long deploy waits for the driver to be ready, and delete for it to go")
}

func newPlainDriverCommand() *cobra.Command {
	opts := deploy.DefaultPlainOptions()
	kubeconfig := os.Getenv("DRAKIT_KUBECONFIG")
	cmd := &cobra.Command{
		Use:   "plain-driver",
		Short: "Deploy or delete the plain DRA driver (plain devices through CDI env and mounts; deliberate defects)",
		Long: `Deploys drakit's plain DRA driver, plain.drakit.dev by default
(reference/plaindriver), from the manifests in reference/deploy/manifests/plain,
in namespace drakit-plain beside the reference driver. It publishes --devices
devices dev-0 … dev-<n-1> and hands them to containers only through CDI: env
PLAIN_DEVICE_<index>=<device>, PLAIN_DEVICE_<index>_SERIAL=<serial> and the
device's directory <state-dir>/devices/<device> mounted read-only at
/var/run/plain/<device>. The driver pod has no capability; it mounts only the
kubelet plugin directories, the CDI directory and its state directory, and a
ValidatingAdmissionPolicy limits its service account to the ResourceSlices of
its own node. --defect runs it with a deliberate bug the conformance kit must
catch (extra-device, leave-cdi-spec, duplicate-device-names); with
duplicate-device-names it publishes no ResourceSlice, and deploy waits for its
pods only.`,
	}
	bindPlainDriverFlags(cmd.PersistentFlags(), &opts)
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", kubeconfig,
		"kubeconfig of the cluster ($DRAKIT_KUBECONFIG; empty: $KUBECONFIG or ~/.kube/config)")

	// connect validates the options, so that bad flags are reported before
	// the kubeconfig is read, and returns a client of the cluster.
	connect := func() (kubernetes.Interface, error) { return validatedClient(opts.Validate, kubeconfig) }
	cmd.AddCommand(&cobra.Command{
		Use:   "deploy",
		Short: "Create or update the plain driver and wait until it runs and has published its ResourceSlice",
		Example: `  eval "$(drakit cluster status -o env)"
  drakit plain-driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
    --cdi-dir "$DRAKIT_CDI_DIR" --state-dir "$DRAKIT_RUN_DIR/plain-driver"`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cs, err := connect()
			if err != nil {
				return err
			}
			return deploy.ApplyPlain(c.Context(), cs, opts)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "delete",
		Short: "Delete the plain driver and its ResourceSlices (succeeds when nothing is deployed)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cs, err := connect()
			if err != nil {
				return err
			}
			return deploy.DeletePlain(c.Context(), cs, opts)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "manifests",
		Short: "Print the manifests deploy would apply, as YAML",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			m, err := deploy.PlainObjects(opts)
			if err != nil {
				return err
			}
			return printObjects(c.OutOrStdout(), m.List())
		},
	})
	return cmd
}

// printObjects writes objs as YAML documents separated by "---".
func printObjects(w io.Writer, objs []runtime.Object) error {
	for i, obj := range objs {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("encode manifests: %w", err)
		}
		sep := "---\n"
		if i == 0 {
			sep = ""
		}
		if _, err := fmt.Fprintf(w, "%s%s", sep, data); err != nil {
			return fmt.Errorf("write manifests: %w", err)
		}
	}
	return nil
}

// validatedClient runs validate, so that bad flags are reported before the
// kubeconfig is read, and returns a client of the kubeconfig's cluster
// (empty: $KUBECONFIG or ~/.kube/config).
func validatedClient(validate func() error, kubeconfig string) (kubernetes.Interface, error) {
	if err := validate(); err != nil {
		return nil, err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return kubernetes.NewForConfig(rc)
}
