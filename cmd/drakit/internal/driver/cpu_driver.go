package driver

import (
	"context"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/reference/deploy"
)

// bindCPUDriverFlags maps every field of deploy.CPUOptions onto a flag; the
// paths default to $DRAKIT_* (as drakit env status -o env prints them)
// when set, the state directory to $DRAKIT_RUN_DIR/cpu-driver.
func bindCPUDriverFlags(fs *pflag.FlagSet, o *deploy.CPUOptions) {
	o.HostRoot = cli.EnvOr("DRAKIT_EMULATOR_ROOT", o.HostRoot)
	if run, ok := os.LookupEnv("DRAKIT_RUN_DIR"); ok {
		o.StateDir = filepath.Join(run, "cpu-driver")
	}
	commonDeployFlags{
		driverName: &o.DriverName, image: &o.Image, kubeletRootDir: &o.KubeletRootDir, cdiDir: &o.CDIDir,
		apiServerHost: &o.APIServerHost, apiServerPort: &o.APIServerPort, timeout: &o.Timeout, node: &o.Node, httpPort: &o.HTTPPort,
		driverNameUsage: "DRA driver name, also the DeviceClass name",
		imageUsage:      "driver image, the reference driver's (never pulled: it must be on the node)",
	}.bind(fs)
	fs.StringVar(&o.HostRoot, "host-root", o.HostRoot, "root on the node whose sys/devices/system/node the driver reads ($DRAKIT_EMULATOR_ROOT)")
	fs.StringVar(&o.StateDir, "state-dir", o.StateDir, "the driver's checkpoint directory on the node ($DRAKIT_RUN_DIR/cpu-driver)")
}

// NewCPUDriverCommand returns drakit cpu-driver.
func NewCPUDriverCommand() *cobra.Command {
	opts := deploy.DefaultCPUOptions()
	return driverDeployCommand{
		use:   "cpu-driver",
		short: "Deploy or delete the CPU DRA driver (NUMA nodes' cpu and memory mapped onto node allocatable, KEP-5517)",
		long: `Deploys drakit's CPU DRA driver, cpu.drakit.dev by default
(reference/cpudriver), from the manifests in reference/deploy/manifests/cpu,
in namespace drakit-cpu beside the other drivers, from the reference driver's
image. It reads the NUMA nodes in <host-root>/sys/devices/system/node
(cpulist, meminfo) and publishes one device numa-<id> per node that many
claims share (allowMultipleAllocations), with capacity cpu and memory mapped
1:1 onto the Node's allocatable cpu and memory (nodeAllocatableResources):
what a claim consumes is counted by the scheduler against node allocatable
and added by the kubelet to the pod's cgroups. Containers get
DRAKIT_CPU_NUMA_<id>_CPUSET, _CPUS and _MEMORY through CDI.`,
		noun:        "the CPU driver",
		deployShort: "Create or update the CPU driver and wait until it runs and has published its ResourceSlice",
		example: `  eval "$(drakit env status -o env)"
  drakit cpu-driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
    --cdi-dir "$DRAKIT_CDI_DIR" --host-root "$DRAKIT_EMULATOR_ROOT"`,
		bind:     func(fs *pflag.FlagSet) { bindCPUDriverFlags(fs, &opts) },
		validate: opts.Validate,
		apply:    func(ctx context.Context, cs kubernetes.Interface) error { return deploy.ApplyCPU(ctx, cs, opts) },
		remove:   func(ctx context.Context, cs kubernetes.Interface) error { return deploy.DeleteCPU(ctx, cs, opts) },
		objects: func() ([]runtime.Object, error) {
			m, err := deploy.CPUObjects(opts)
			if err != nil {
				return nil, err
			}
			return m.List(), nil
		},
	}.command()
}
