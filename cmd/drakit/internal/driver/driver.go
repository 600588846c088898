// Package driver is the reference drivers' deployment: drakit driver (the
// GPU driver, and simulate), nic-driver, cpu-driver, tpu-driver and
// plain-driver (and its verdict matrix).
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

// bindDriverFlags maps every field of deploy.Options onto a flag; the paths
// default to $DRAKIT_* (as drakit env status -o env prints them) when set.
func bindDriverFlags(fs *pflag.FlagSet, o *deploy.Options) {
	o.DriverRoot = cli.EnvOr("DRAKIT_EMULATOR_ROOT", o.DriverRoot)
	commonDeployFlags{
		driverName: &o.DriverName, image: &o.Image, kubeletRootDir: &o.KubeletRootDir, cdiDir: &o.CDIDir,
		apiServerHost: &o.APIServerHost, apiServerPort: &o.APIServerPort, timeout: &o.Timeout, node: &o.Node, httpPort: &o.HTTPPort,
		driverNameUsage: "DRA driver name, also the DeviceClass name",
		imageUsage:      "driver image (never pulled: it must be on the node)",
	}.bind(fs)
	fs.StringVar(&o.DriverRoot, "driver-root", o.DriverRoot, "NVIDIA driver root on the node: the emulator root ($DRAKIT_EMULATOR_ROOT)")
	fs.BoolVar(&o.PartitionableAlpha, "partitionable-alpha", o.PartitionableAlpha, "publish partitionTypeAttribute and compatibilityGroups (alpha gates DRAPartitionableDevicesType, KEP-4815, and DRADeviceCompatibilityGroups, KEP-5963, on)")
	fs.BoolVar(&o.DeviceNodesOnly, "device-nodes-only", o.DeviceNodesOnly, "CDI edits give only device nodes: containers get NVML from the node's container stack (on drakit's local cluster, the emulator's NRI plugin), as with a third-party driver")
	fs.BoolVar(&o.ListAttributes, "list-attributes", o.ListAttributes, "publish the int list attribute closeNUMANodes, the NUMA nodes close to each device (alpha gate DRAListTypeAttributes, KEP-5491, on)")
	fs.BoolVar(&o.DeviceMetadata, "device-metadata", o.DeviceMetadata, "write device metadata files for containers (KEP-5304); --device-metadata=false: none")
	fs.BoolVar(&o.BindingConditions, "binding-conditions", o.BindingConditions, "publish every device with bindingConditions <driver name>/attached and bindingFailureConditions <driver name>/attach-failed (KEP-5007); an attach controller, such as the conformance kit's, sets them")
	fs.IntVar(&o.IMEXChannels, "imex-channels", o.IMEXChannels, "deploy the IMEX channel controller with this many channels per NVLink clique, and DeviceClass imex.<driver name> (0: none)")
	fs.StringVar(&o.RuntimeClassName, "runtime-class-name", o.RuntimeClassName, "RuntimeClass of the driver pods (local cluster: drakit-mig-manager, which lets dynamic MIG read the MIG capability devices unprivileged); empty: the node's default")
	fs.StringVar(&o.RegistrarDir, "registrar-dir", o.RegistrarDir, "where the driver registers its plugin, below --kubelet-root-dir (default: the kubelet's plugins_registry; another directory puts it behind drakit interpose)")
	fs.BoolVar(&o.Privileged, "privileged", o.Privileged, "run the driver container privileged, not with least privilege: dynamic MIG needs it under runc's device cgroup")
}

// NewDriverCommand returns drakit driver.
func NewDriverCommand() *cobra.Command {
	opts := deploy.DefaultOptions()
	return driverDeployCommand{
		use:   "driver",
		short: "Deploy or delete the reference DRA driver (DaemonSet, RBAC, admission policy, DeviceClasses)",
		long: `Deploys drakit's reference DRA driver, gpu.drakit.dev by default, from the
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
		noun:        "the driver",
		deployShort: "Create or update the driver and wait until it runs and has published its ResourceSlices",
		example: `  eval "$(drakit env status -o env)"
  drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
    --cdi-dir "$DRAKIT_CDI_DIR" --driver-root "$DRAKIT_EMULATOR_ROOT"`,
		bind:     func(fs *pflag.FlagSet) { bindDriverFlags(fs, &opts) },
		validate: opts.Validate,
		apply:    func(ctx context.Context, cs kubernetes.Interface) error { return deploy.Apply(ctx, cs, opts) },
		remove:   func(ctx context.Context, cs kubernetes.Interface) error { return deploy.Delete(ctx, cs, opts) },
		objects: func() ([]runtime.Object, error) {
			m, err := deploy.Objects(opts)
			if err != nil {
				return nil, err
			}
			return m.List(), nil
		},
		more: []*cobra.Command{newDriverSimulateCommand()},
	}.command()
}
