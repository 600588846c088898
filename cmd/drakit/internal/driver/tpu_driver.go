package driver

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/reference/deploy"
)

// bindTPUDriverFlags maps every field of deploy.TPUOptions onto a flag; the
// paths default to $DRAKIT_* when set.
func bindTPUDriverFlags(fs *pflag.FlagSet, o *deploy.TPUOptions) {
	o.HostRoot = cli.EnvOr("DRAKIT_EMULATOR_ROOT", o.HostRoot)
	commonDeployFlags{
		driverName: &o.DriverName, image: &o.Image, kubeletRootDir: &o.KubeletRootDir, cdiDir: &o.CDIDir,
		apiServerHost: &o.APIServerHost, apiServerPort: &o.APIServerPort, timeout: &o.Timeout, node: &o.Node, httpPort: &o.HTTPPort,
		driverNameUsage: "DRA driver name, also the chips' DeviceClass name (the sub-slices' is subslice.<name>)",
		imageUsage:      "driver image, the reference driver's (never pulled: it must be on the node)",
	}.bind(fs)
	fs.StringVar(&o.HostRoot, "host-root", o.HostRoot, "the emulator root on the node, whose sys/ and tpu-env the driver reads ($DRAKIT_EMULATOR_ROOT)")
	fs.StringVar(&o.Shapes, "shapes", o.Shapes, `sub-slice shapes the controller publishes, comma-separated XxYxZ or "full"`)
}

// NewTPUDriverCommand returns drakit tpu-driver.
func NewTPUDriverCommand() *cobra.Command {
	opts := deploy.DefaultTPUOptions()
	return driverDeployCommand{
		use:   "tpu-driver",
		short: "Deploy or delete the TPU DRA driver (chips with torus coordinates, multi-host sub-slices)",
		long: `Deploys drakit's TPU DRA driver, tpu.drakit.dev by default
(reference/tpudriver), from the manifests in reference/deploy/manifests/tpu,
in namespace drakit-tpu, from the reference driver's image: a kubelet plugin
on every node that publishes the node's TPU chips (DeviceClass <driver-name>)
with their torus coordinates, read from <host-root>/sys and the host's
tpu-env, and a one-replica controller that publishes each multi-host slice's
sub-slices of the configured shapes (DeviceClass subslice.<driver-name>) with
per-device node selection and shared counters keeping overlapping sub-slices
apart. The plugin pod has no capability and mounts the kubelet plugin
directories, the CDI directory and the emulator's sysfs and tpu-env
(read-only); a ValidatingAdmissionPolicy limits it to its own node's
ResourceSlices. The controller mounts nothing of the host.`,
		noun:        "the TPU driver",
		deployShort: "Create or update the TPU driver and wait until its plugins and controller run",
		example: `  eval "$(drakit env status -o env)"
  drakit tpu-driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
    --cdi-dir "$DRAKIT_CDI_DIR" --host-root "$DRAKIT_EMULATOR_ROOT"`,
		bind:     func(fs *pflag.FlagSet) { bindTPUDriverFlags(fs, &opts) },
		validate: opts.Validate,
		apply:    func(ctx context.Context, cs kubernetes.Interface) error { return deploy.ApplyTPU(ctx, cs, opts) },
		remove:   func(ctx context.Context, cs kubernetes.Interface) error { return deploy.DeleteTPU(ctx, cs, opts) },
		objects: func() ([]runtime.Object, error) {
			m, err := deploy.TPUObjects(opts)
			if err != nil {
				return nil, err
			}
			return m.List(), nil
		},
	}.command()
}
