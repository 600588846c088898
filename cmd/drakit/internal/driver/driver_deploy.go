package driver

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
)

// What drakit driver, plain-driver and nic-driver share: the deploy
// options every driver has as flags, and the command with its deploy,
// delete and manifests subcommands.

// commonDeployFlags point at the fields every deploy options struct has.
type commonDeployFlags struct {
	driverName, image, kubeletRootDir, cdiDir, apiServerHost, node *string
	apiServerPort, httpPort                                        *int
	timeout                                                        *time.Duration
	// driverNameUsage and imageUsage are the usage of --driver-name and
	// --image (which classes the name names, which image it is).
	driverNameUsage, imageUsage string
}

// bind maps the fields onto flags; the kubelet root and the CDI directory
// default to $DRAKIT_KUBELET_ROOT_DIR and $DRAKIT_CDI_DIR (as drakit env
// status -o env prints them) when set.
func (c commonDeployFlags) bind(fs *pflag.FlagSet) {
	*c.kubeletRootDir = cli.EnvOr("DRAKIT_KUBELET_ROOT_DIR", *c.kubeletRootDir)
	*c.cdiDir = cli.EnvOr("DRAKIT_CDI_DIR", *c.cdiDir)
	fs.StringVar(c.driverName, "driver-name", *c.driverName, c.driverNameUsage)
	fs.StringVar(c.image, "image", *c.image, c.imageUsage)
	fs.StringVar(c.kubeletRootDir, "kubelet-root-dir", *c.kubeletRootDir, "the kubelet's --root-dir on the node ($DRAKIT_KUBELET_ROOT_DIR)")
	fs.StringVar(c.cdiDir, "cdi-dir", *c.cdiDir, "the container runtime's CDI spec directory on the node ($DRAKIT_CDI_DIR)")
	fs.StringVar(c.apiServerHost, "apiserver-host", *c.apiServerHost, "KUBERNETES_SERVICE_HOST of the hostNetwork driver pod (empty: keep the kubelet's)")
	fs.IntVar(c.apiServerPort, "apiserver-port", *c.apiServerPort, "KUBERNETES_SERVICE_PORT of the hostNetwork driver pod (0 with an empty host)")
	fs.IntVar(c.httpPort, "http-port", *c.httpPort, "port on the node's loopback where the driver serves /metrics and /healthz "+
		"(--http-endpoint=127.0.0.1:<port>) and the liveness probe asks; 0: neither; on a multi-node local cluster each node's deployment needs its own")
	fs.DurationVar(c.timeout, "timeout", *c.timeout, "how long deploy waits for the driver to be ready, and delete for it to go")
	fs.StringVar(c.node, "node", *c.node, "pin to one node: DaemonSet <name>-<node, dots as dashes> with nodeSelector kubernetes.io/hostname=<node>; "+
		"on a multi-node local cluster deploy once per node with its paths (drakit env status -o env: DRAKIT_NODE_<i>_*); "+
		"delete --node removes only that node's DaemonSet (empty: every node, one DaemonSet)")
}

// driverDeployCommand describes one driver's command.
type driverDeployCommand struct {
	// use, short and long are the command's.
	use, short, long string
	// noun names the driver in the subcommands' help ("the plain
	// driver"); deployShort is deploy's short help, example its example.
	noun, deployShort, example string
	// bind binds the options' flags.
	bind func(fs *pflag.FlagSet)
	// validate, apply, remove and objects are the options' Validate and
	// the deploy package's Apply, Delete and Objects for them.
	validate func() error
	apply    func(ctx context.Context, client kubernetes.Interface) error
	remove   func(ctx context.Context, client kubernetes.Interface) error
	objects  func() ([]runtime.Object, error)
	// more are further subcommands.
	more []*cobra.Command
}

// command builds the command: the options' flags and --kubeconfig,
// persistent, and the subcommands deploy, delete and manifests.
func (d driverDeployCommand) command() *cobra.Command {
	cmd := &cobra.Command{Use: d.use, Short: d.short, Long: d.long}
	d.bind(cmd.PersistentFlags())
	kube := cli.BindKubeFlags(cmd.PersistentFlags())
	kube.Register(cmd)

	// connected runs f with a client of the cluster, once the options are
	// validated: bad flags are reported before the kubeconfig is read.
	connected := func(f func(ctx context.Context, client kubernetes.Interface) error) func(*cobra.Command, []string) error {
		return func(c *cobra.Command, _ []string) error {
			cs, err := kube.ValidatedClient(d.validate)
			if err != nil {
				return err
			}
			return f(c.Context(), cs)
		}
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "deploy",
		Short:   d.deployShort,
		Example: d.example,
		Args:    cobra.NoArgs,
		RunE:    connected(d.apply),
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "delete",
		Short: "Delete " + d.noun + " and its ResourceSlices (succeeds when nothing is deployed)",
		Args:  cobra.NoArgs,
		RunE:  connected(d.remove),
	})
	cmd.AddCommand(d.more...)
	cmd.AddCommand(&cobra.Command{
		Use:   "manifests",
		Short: "Print the manifests deploy would apply, as YAML",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			objs, err := d.objects()
			if err != nil {
				return err
			}
			return printObjects(c.OutOrStdout(), objs)
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
