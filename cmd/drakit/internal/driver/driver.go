// Package driver is drakit driver: deploy, delete and print the manifests
// of a reference driver of the family (--kind gpu, nic, cpu, tpu or
// plain: the chart deployments/helm/drakit-driver, rendered by
// reference/deploy), simulate the GPU driver's publishing, and the plain
// driver's verdict matrix.
package driver

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/reference/deploy"
	"drakit.dev/drakit/reference/plaindriver"
)

// bindOptions maps every field of deploy.Options onto a flag, once for
// every kind: the options every kind has, then each kind's own (which
// deploy.Options.Validate refuses for another kind). The defaults are
// o's: the kind's (DefaultOptions) when the options are resolved.
func bindOptions(fs *pflag.FlagSet, o *deploy.Options) {
	fs.StringVar((*string)(&o.Kind), "kind", string(o.Kind), "the driver: gpu, nic, cpu, tpu or plain")
	fs.StringVar(&o.DriverName, "driver-name", o.DriverName, "DRA driver name, also the name of its first DeviceClass (default: the kind's, <kind>.drakit.dev)")
	fs.StringVar(&o.Image, "image", o.Image, "driver image, whose drakit-driver every kind runs (--kind); never pulled: it must be on the node")
	fs.StringVar(&o.KubeletRootDir, "kubelet-root-dir", o.KubeletRootDir, "the kubelet's --root-dir on the node ($DRAKIT_KUBELET_ROOT_DIR)")
	fs.StringVar(&o.RegistrarDir, "registrar-dir", o.RegistrarDir, "where the driver registers its plugin, below --kubelet-root-dir (default: the kubelet's plugins_registry; another directory puts it behind drakit interpose)")
	fs.StringVar(&o.CDIDir, "cdi-dir", o.CDIDir, "the container runtime's CDI spec directory on the node ($DRAKIT_CDI_DIR)")
	fs.StringVar(&o.HostRoot, "host-root", o.HostRoot, "the emulator root on the node ($DRAKIT_EMULATOR_ROOT): the GPU driver's driver root (--driver-root), "+
		"the root of the NIC driver's sysfs, the CPU driver's NUMA nodes, the TPU driver's sysfs and tpu-env")
	fs.StringVar(&o.StateDir, "state-dir", o.StateDir, "cpu, plain: the driver's state directory on the node ($DRAKIT_RUN_DIR/<kind>-driver; "+
		"a plain --variant's with -<variant> appended)")
	fs.StringVar(&o.APIServerHost, "apiserver-host", o.APIServerHost, "KUBERNETES_SERVICE_HOST of the hostNetwork driver pod (empty: keep the kubelet's)")
	fs.IntVar(&o.APIServerPort, "apiserver-port", o.APIServerPort, "KUBERNETES_SERVICE_PORT of the hostNetwork driver pod (0 with an empty host)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long deploy waits for the driver to be ready, and delete for it to go")
	fs.StringVar(&o.Node, "node", o.Node, "pin to one node: DaemonSet <name>-<node, dots as dashes> with nodeSelector kubernetes.io/hostname=<node>; "+
		"on a multi-node local cluster deploy once per node with its paths (drakit env status -o env: DRAKIT_NODE_<i>_*); "+
		"delete --node removes only that node's DaemonSet (empty: every node, one DaemonSet)")
	fs.IntVar(&o.HTTPPort, "http-port", o.HTTPPort, "port on the node's loopback where the driver serves /metrics and /healthz "+
		"(--http-endpoint=127.0.0.1:<port>) and the liveness probe asks; 0: neither; default: the kind's, gpu 9470, nic 9471, cpu 9472, tpu 9473, plain 9474; "+
		"on a multi-node local cluster each node's deployment needs its own")

	fs.BoolVar(&o.PartitionableAlpha, "partitionable-alpha", o.PartitionableAlpha, "gpu: publish partitionTypeAttribute and compatibilityGroups (alpha gates DRAPartitionableDevicesType, KEP-4815, and DRADeviceCompatibilityGroups, KEP-5963, on)")
	fs.BoolVar(&o.DeviceMetadata, "device-metadata", o.DeviceMetadata, "gpu: write device metadata files for containers (KEP-5304; the gpu kind's default: true)")
	fs.BoolVar(&o.BindingConditions, "binding-conditions", o.BindingConditions, "gpu: publish every device with bindingConditions <driver name>/attached and bindingFailureConditions <driver name>/attach-failed (KEP-5007); an attach controller, such as the conformance kit's, sets them")
	fs.BoolVar(&o.ListAttributes, "list-attributes", o.ListAttributes, "gpu: publish the int list attribute closeNUMANodes, the NUMA nodes close to each device (alpha gate DRAListTypeAttributes, KEP-5491, on)")
	fs.BoolVar(&o.DeviceNodesOnly, "device-nodes-only", o.DeviceNodesOnly, "gpu: CDI edits give only device nodes: containers get NVML from the node's container stack (on drakit's local cluster, the emulator's NRI plugin), as with a third-party driver")
	fs.StringVar(&o.RuntimeClassName, "runtime-class-name", o.RuntimeClassName, "gpu: RuntimeClass of the driver pods (local cluster: drakit-mig-manager, which lets dynamic MIG read the MIG capability devices unprivileged); empty: the node's default")
	fs.BoolVar(&o.Privileged, "privileged", o.Privileged, "gpu: run the driver container privileged, not with least privilege: dynamic MIG needs it under runc's device cgroup")
	fs.IntVar(&o.IMEXChannels, "imex-channels", o.IMEXChannels, "gpu: deploy the IMEX channel controller with this many channels per NVLink clique, and DeviceClass imex.<driver name> (0: none)")
	fs.IntVar(&o.VFsPerPF, "vfs-per-pf", o.VFsPerPF, "nic: VFs published per PF, created when the first is prepared (the nic kind's default: 4)")
	fs.StringVar(&o.Shapes, "shapes", o.Shapes, `tpu: sub-slice shapes the controller publishes, comma-separated XxYxZ or "full" (the tpu kind's default: `+defaultShapes()+")")
	fs.IntVar(&o.Devices, "devices", o.Devices, "plain: number of devices the driver publishes, dev-0 … dev-<n-1> (the plain kind's default: 4)")
	fs.StringVar(&o.Variant, "variant", o.Variant, "plain: deploy beside other variants: namespace and objects drakit-plain-<variant>, driver name "+
		"<variant>.plain.drakit.dev unless --driver-name is given; give each variant its own --http-port (or 0)")
	fs.StringVar((*string)(&o.Style), "style", string(o.Style), "plain: how the driver publishes devices and hands them to containers: "+
		names(plaindriver.Styles())+"; empty: mounts")
	fs.StringVar((*string)(&o.Defect), "defect", string(o.Defect), "plain: a deliberate bug for the conformance kit to catch: "+
		names(plaindriver.Defects())+"; empty: none")
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "driver-root" { // the GPU driver's name of --host-root
			name = "host-root"
		}
		return pflag.NormalizedName(name)
	})
}

func defaultShapes() string { return deploy.DefaultOptions(deploy.KindTPU).Shapes }

func names[T ~string](all []T) string {
	s := make([]string, len(all))
	for i, n := range all {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// envDefaults gives o the paths of drakit env status -o env where they are
// set: $DRAKIT_KUBELET_ROOT_DIR, $DRAKIT_CDI_DIR, $DRAKIT_EMULATOR_ROOT and,
// for the kinds with a state directory, $DRAKIT_RUN_DIR/<kind>-driver.
func envDefaults(o *deploy.Options) {
	o.KubeletRootDir = cli.EnvOr("DRAKIT_KUBELET_ROOT_DIR", o.KubeletRootDir)
	o.CDIDir = cli.EnvOr("DRAKIT_CDI_DIR", o.CDIDir)
	o.HostRoot = cli.EnvOr("DRAKIT_EMULATOR_ROOT", o.HostRoot)
	if run, ok := os.LookupEnv("DRAKIT_RUN_DIR"); ok && o.StateDir != "" {
		o.StateDir = filepath.Join(run, string(o.Kind)+"-driver")
	}
}

// options resolves the options the flags of fs (bound by bindOptions) say:
// the kind's defaults (deploy.DefaultOptions) with the environment's paths,
// and every flag given on the command line over them; a plain --variant
// names the driver and the state directory after it where the flags did
// not.
func options(fs *pflag.FlagSet) (deploy.Options, error) {
	kind, err := fs.GetString("kind")
	if err != nil {
		return deploy.Options{}, err
	}
	o := deploy.DefaultOptions(deploy.Kind(kind))
	envDefaults(&o)
	resolved := pflag.NewFlagSet("resolved", pflag.ContinueOnError)
	bindOptions(resolved, &o)
	fs.Visit(func(f *pflag.Flag) {
		if err == nil && resolved.Lookup(f.Name) != nil {
			err = resolved.Set(f.Name, f.Value.String())
		}
	})
	if err != nil {
		return deploy.Options{}, err
	}
	if o.Kind == deploy.KindPlain && o.Variant != "" {
		if !fs.Changed("driver-name") {
			o.DriverName = plaindriver.VariantDriverName(o.Variant)
		}
		if !fs.Changed("state-dir") && !strings.HasSuffix(o.StateDir, "-"+o.Variant) {
			o.StateDir += "-" + o.Variant
		}
	}
	return o, nil
}

// flagDefaults are the options the flags show as their defaults: what
// every kind has (the kind's own defaults are in the flags' help), with
// the environment's paths.
func flagDefaults() deploy.Options {
	o := deploy.DefaultOptions(deploy.KindGPU)
	o.DriverName, o.HTTPPort, o.DeviceMetadata = "", 0, false
	envDefaults(&o)
	return o
}

// NewDriverCommand returns drakit driver.
func NewDriverCommand() *cobra.Command {
	cmd := newDeployCommand("driver", "")
	cmd.AddCommand(newDriverSimulateCommand(), newMatrixCommand())
	return cmd
}

// newDeployCommand returns the command use with the subcommands deploy,
// delete and manifests, each with the options' flags (deploy and delete
// with --kubeconfig too); kind, when set, is --kind's default.
func newDeployCommand(use string, kind deploy.Kind) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: "Deploy or delete a reference DRA driver (--kind gpu, nic, cpu, tpu or plain): the chart deployments/helm/drakit-driver",
		Long: `Deploys one of drakit's reference DRA drivers, --kind gpu (gpu.drakit.dev, the
default), nic, cpu, tpu or plain (drakit's plain test driver), by rendering the
chart deployments/helm/drakit-driver (embedded; what helm install renders) and
applying it: the kubelet plugin DaemonSet with its RBAC, a
ValidatingAdmissionPolicy that limits its service account to the ResourceSlices
of its own node, its DeviceClasses and, for the GPU driver with --imex-channels
and for the TPU driver, a cluster-level controller. Every host path (kubelet
plugin directories, CDI directory, the emulator's root, state directories) is
mounted at the same path inside the driver pod; system directories (/, /etc,
/usr, /var, ...) are refused. The drivers run with least privilege. Creating
and destroying the GPU driver's dynamic MIG devices also needs read access to
the MIG config capability device, which a container's device cgroup (runc)
refuses: give it with --runtime-class-name drakit-mig-manager on the local
cluster, or with --privileged where no such RuntimeClass exists. Options of
another kind than --kind's are refused; each kind's defaults are its own.`,
	}
	// sub returns a subcommand with the options' flags that runs f with
	// the resolved options and, with connect, a client (after the options
	// are validated: bad flags are reported before the kubeconfig is read).
	sub := func(use, short string, connect bool, f func(c *cobra.Command, client kubernetes.Interface, o deploy.Options) error) *cobra.Command {
		c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
		defaults := flagDefaults()
		if kind != "" {
			defaults.Kind = kind
		}
		bindOptions(c.Flags(), &defaults)
		var kube *cli.KubeFlags
		if connect {
			kube = cli.BindKubeFlags(c.Flags())
			kube.Register(c)
		}
		c.RunE = func(c *cobra.Command, _ []string) error {
			o, err := options(c.Flags())
			if err != nil {
				return err
			}
			var client kubernetes.Interface
			if connect {
				if client, err = kube.ValidatedClient(o.Validate); err != nil {
					return err
				}
			}
			return f(c, client, o)
		}
		cmd.AddCommand(c)
		return c
	}
	deployCmd := sub("deploy", "Create or update the driver and wait until it runs and has published its ResourceSlices", true,
		func(c *cobra.Command, client kubernetes.Interface, o deploy.Options) error {
			return deploy.Apply(c.Context(), client, o)
		})
	deployCmd.Example = `  eval "$(drakit env status -o env)"    # the local cluster's paths (shell variables: pass them)
  paths=(--kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" --cdi-dir "$DRAKIT_CDI_DIR")
  drakit driver deploy "${paths[@]}" --host-root "$DRAKIT_EMULATOR_ROOT" --runtime-class-name drakit-mig-manager
  drakit driver deploy "${paths[@]}" --host-root "$DRAKIT_EMULATOR_ROOT" --kind nic --vfs-per-pf 2
  drakit driver deploy "${paths[@]}" --kind plain --state-dir "$DRAKIT_RUN_DIR/plain-driver" \
    --variant wrong-device --defect wrong-device --http-port 9501`
	sub("delete", "Delete the driver and its ResourceSlices (succeeds when nothing is deployed)", true,
		func(c *cobra.Command, client kubernetes.Interface, o deploy.Options) error {
			return deploy.Delete(c.Context(), client, o)
		})
	sub("manifests", "Print the manifests deploy would apply, as YAML (the chart rendered for the flags)", false,
		func(c *cobra.Command, _ kubernetes.Interface, o deploy.Options) error {
			m, err := deploy.Objects(o)
			if err != nil {
				return err
			}
			return printObjects(c.OutOrStdout(), m)
		})
	return cmd
}

// printObjects writes the objects as YAML documents separated by "---".
func printObjects(w io.Writer, m *deploy.Manifests) error {
	for i, obj := range m.List() {
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
