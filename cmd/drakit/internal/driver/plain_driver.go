package driver

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/reference/deploy"
	"drakit.dev/drakit/reference/plaindriver"
)

// bindPlainDriverFlags maps every field of deploy.PlainOptions onto a flag;
// the paths default to $DRAKIT_* (as drakit env status -o env prints
// them) when set, the state directory to $DRAKIT_RUN_DIR/plain-driver.
func bindPlainDriverFlags(fs *pflag.FlagSet, o *deploy.PlainOptions) {
	if run, ok := os.LookupEnv("DRAKIT_RUN_DIR"); ok {
		o.StateDir = filepath.Join(run, "plain-driver")
	}
	known := make([]string, 0, len(plaindriver.Defects()))
	for _, d := range plaindriver.Defects() {
		known = append(known, string(d))
	}
	commonDeployFlags{
		driverName: &o.DriverName, image: &o.Image, kubeletRootDir: &o.KubeletRootDir, cdiDir: &o.CDIDir,
		apiServerHost: &o.APIServerHost, apiServerPort: &o.APIServerPort, timeout: &o.Timeout, node: &o.Node, httpPort: &o.HTTPPort,
		driverNameUsage: "DRA driver name, also the DeviceClass name",
		imageUsage:      "driver image (never pulled: it must be on the node)",
	}.bind(fs)
	fs.StringVar(&o.StateDir, "state-dir", o.StateDir, "the driver's state directory on the node, mounted into containers per device ($DRAKIT_RUN_DIR/plain-driver; with --variant, -<variant> appended)")
	fs.IntVar(&o.Devices, "devices", o.Devices, "number of devices the driver publishes, dev-0 … dev-<n-1>")
	styles := make([]string, 0, len(plaindriver.Styles()))
	for _, s := range plaindriver.Styles() {
		styles = append(styles, string(s))
	}
	fs.StringVar((*string)(&o.Style), "style", string(o.Style),
		"how the driver publishes devices and hands them to containers: "+strings.Join(styles, ", ")+"; empty: mounts")
	fs.StringVar((*string)(&o.Defect), "defect", string(o.Defect),
		"a deliberate bug for the conformance kit to catch: "+strings.Join(known, ", ")+"; empty: none")
	fs.StringVar(&o.Variant, "variant", o.Variant,
		"deploy beside other variants: namespace and objects drakit-plain-<variant>, driver name <variant>.plain.drakit.dev unless --driver-name is given; give each variant its own --http-port (or 0)")
}

// resolvePlainVariant derives what --variant changes and the flags did not
// set: the driver name <variant>.plain.drakit.dev and the state directory
// <state dir>-<variant>.
func resolvePlainVariant(fs *pflag.FlagSet, o *deploy.PlainOptions) {
	if o.Variant == "" || fs == nil {
		return
	}
	if !fs.Changed("driver-name") {
		o.DriverName = plaindriver.VariantDriverName(o.Variant)
	}
	if !fs.Changed("state-dir") && !strings.HasSuffix(o.StateDir, "-"+o.Variant) {
		o.StateDir += "-" + o.Variant
	}
}

// NewPlainDriverCommand returns drakit plain-driver.
func NewPlainDriverCommand() *cobra.Command {
	opts := deploy.DefaultPlainOptions()
	var flags *pflag.FlagSet
	resolved := func() *deploy.PlainOptions {
		resolvePlainVariant(flags, &opts)
		return &opts
	}
	cmd := driverDeployCommand{
		use:   "plain-driver",
		short: "Deploy or delete the plain DRA driver (plain devices through CDI env and mounts; deliberate defects)",
		long: `Deploys drakit's plain DRA driver, plain.drakit.dev by default
(reference/plaindriver), from the manifests in reference/deploy/manifests/plain,
in namespace drakit-plain beside the reference driver. It publishes --devices
devices dev-0 … dev-<n-1> and hands them to containers only through CDI: env
PLAIN_DEVICE_<index>=<device>, PLAIN_DEVICE_<index>_SERIAL=<serial> and the
device's directory <state-dir>/devices/<device> mounted read-only at
/var/run/plain/<device>. The driver pod has no capability; it mounts only the
kubelet plugin directories, the CDI directory and its state directory, and a
ValidatingAdmissionPolicy limits its service account to the ResourceSlices of
its own node. --style picks how it publishes devices and hands them to containers (mounts,
env-only, device-nodes, partitions, consumable-capacity, strict-config);
--defect runs it with a deliberate bug the conformance kit must catch (see
--help of --defect; reference/plaindriver documents each); with
duplicate-device-names it publishes no ResourceSlice, and deploy waits for its
pods only. --variant deploys it beside other variants, in namespace
drakit-plain-<variant> as driver <variant>.plain.drakit.dev, and delete with
the same --variant (and --style) removes that variant alone.`,
		noun:        "the plain driver",
		deployShort: "Create or update the plain driver and wait until it runs and has published its ResourceSlice",
		example: `  eval "$(drakit env status -o env)"
  drakit plain-driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
    --cdi-dir "$DRAKIT_CDI_DIR" --state-dir "$DRAKIT_RUN_DIR/plain-driver"
  drakit plain-driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
    --cdi-dir "$DRAKIT_CDI_DIR" --variant wrong-device --defect wrong-device --http-port 9501`,
		bind: func(fs *pflag.FlagSet) {
			bindPlainDriverFlags(fs, &opts)
			flags = fs
		},
		validate: func() error { return resolved().Validate() },
		apply: func(ctx context.Context, cs kubernetes.Interface) error {
			return deploy.ApplyPlain(ctx, cs, *resolved())
		},
		remove: func(ctx context.Context, cs kubernetes.Interface) error {
			return deploy.DeletePlain(ctx, cs, *resolved())
		},
		objects: func() ([]runtime.Object, error) {
			m, err := deploy.PlainObjects(*resolved())
			if err != nil {
				return nil, err
			}
			return m.List(), nil
		},
	}.command()
	cmd.AddCommand(newPlainMatrixCommand())
	return cmd
}
