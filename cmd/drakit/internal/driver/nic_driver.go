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

// bindNICDriverFlags maps every field of deploy.NICOptions onto a flag; the
// paths default to $DRAKIT_* (as drakit env status -o env prints them)
// when set.
func bindNICDriverFlags(fs *pflag.FlagSet, o *deploy.NICOptions) {
	o.HostRoot = cli.EnvOr("DRAKIT_EMULATOR_ROOT", o.HostRoot)
	commonDeployFlags{
		driverName: &o.DriverName, image: &o.Image, kubeletRootDir: &o.KubeletRootDir, cdiDir: &o.CDIDir,
		apiServerHost: &o.APIServerHost, apiServerPort: &o.APIServerPort, timeout: &o.Timeout, node: &o.Node, httpPort: &o.HTTPPort,
		driverNameUsage: "DRA driver name, also the PF shares' DeviceClass name (the VFs' is vf.<name>)",
		imageUsage:      "driver image, the reference driver's (never pulled: it must be on the node)",
	}.bind(fs)
	fs.StringVar(&o.HostRoot, "host-root", o.HostRoot, "the emulator root on the node, whose sys/ the driver reads and writes ($DRAKIT_EMULATOR_ROOT)")
	fs.IntVar(&o.VFsPerPF, "vfs-per-pf", o.VFsPerPF, "VFs published per PF (created when the first is prepared)")
}

// NewNICDriverCommand returns drakit nic-driver.
func NewNICDriverCommand() *cobra.Command {
	opts := deploy.DefaultNICOptions()
	return driverDeployCommand{
		use:   "nic-driver",
		short: "Deploy or delete the NIC DRA driver (SR-IOV VFs, PF bandwidth shares, device status)",
		long: `Deploys drakit's NIC DRA driver, nic.drakit.dev by default
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
		noun:        "the NIC driver",
		deployShort: "Create or update the NIC driver and wait until it runs and has published its ResourceSlice",
		example: `  eval "$(drakit env status -o env)"
  drakit nic-driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
    --cdi-dir "$DRAKIT_CDI_DIR" --host-root "$DRAKIT_EMULATOR_ROOT"`,
		bind:     func(fs *pflag.FlagSet) { bindNICDriverFlags(fs, &opts) },
		validate: opts.Validate,
		apply:    func(ctx context.Context, cs kubernetes.Interface) error { return deploy.ApplyNIC(ctx, cs, opts) },
		remove:   func(ctx context.Context, cs kubernetes.Interface) error { return deploy.DeleteNIC(ctx, cs, opts) },
		objects: func() ([]runtime.Object, error) {
			m, err := deploy.NICObjects(opts)
			if err != nil {
				return nil, err
			}
			return m.List(), nil
		},
	}.command()
}
