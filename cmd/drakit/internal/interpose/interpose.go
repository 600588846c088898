// Package interpose is drakit interpose: between the kubelet and a DRA
// driver, forwarding, recording and injecting contract faults.
package interpose

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"drakit.dev/drakit/conformance/interpose"
)

// NewCommand returns drakit interpose.
func NewCommand() *cobra.Command {
	cfg := interpose.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "interpose",
		Short: "Sit between the kubelet and a DRA driver: forward, record and inject contract faults",
		Long: `Interpose asks the driver's registration socket (in a registration directory
of its own: point the driver's kubelet registrar directory elsewhere) who it
is, serves the driver's DRA services (DRAPlugin v1/v1beta1, DRAResourceHealth
v1/v1alpha1) on its own endpoint, forwarding every call to the driver, and
registers with the kubelet in its place. With --driver-registrar-dir instead
of --driver-registration-socket it follows the newest socket in that
directory that serves the driver: a driver with per-pod socket names
(kubeletplugin.RollingUpdate: <driver>-<pod UID>-reg.sock or a hashed name,
dra-<pod UID>.sock) is followed across rolling updates of its DaemonSet. Every call is recorded (--records:
JSON lines). Fault rules (--rules, kind FaultRules) delay a call, fail it with
a gRPC status, drop the kubelet's connection, replace a claim's answer with a
per-claim error or run a command, before or after the driver answers; the
control endpoint (--control) arms and clears rules while running, serves the
records and calls the driver directly. It runs until interrupted and then
removes its sockets.`,
		Example: `  drakit interpose \
    --driver-registration-socket /var/lib/kubelet/plugins/gpu.drakit.dev-interposed/gpu.drakit.dev-reg.sock \
    --kubelet-registrar-dir /var/lib/kubelet/plugins_registry \
    --control 127.0.0.1:7070 --records /tmp/interpose.jsonl
  curl -s 127.0.0.1:7070/v1/records?method=NodePrepareResources
  drakit interpose --driver-registrar-dir /var/lib/kubelet/plugins/example.com-interposed   # per-pod socket names`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return interpose.Run(c.Context(), cfg)
		},
	}
	bindInterposeFlags(cmd.Flags(), &cfg)
	return cmd
}

// bindInterposeFlags binds the flags of drakit interpose to cfg, 1:1.
func bindInterposeFlags(f *pflag.FlagSet, cfg *interpose.Config) {
	f.StringVar(&cfg.DriverRegistrationSocket, "driver-registration-socket", cfg.DriverRegistrationSocket, "the driver's registration socket, in a directory other than the kubelet's (this or --driver-registrar-dir)")
	f.StringVar(&cfg.DriverRegistrarDir, "driver-registrar-dir", cfg.DriverRegistrarDir, "the driver's registration directory, other than the kubelet's: follow the newest socket there that serves the driver (per-pod socket names, rolling updates)")
	f.StringVar(&cfg.KubeletRegistrarDir, "kubelet-registrar-dir", cfg.KubeletRegistrarDir, "the kubelet's plugin registration directory, where the interposer registers as <driver>-reg.sock")
	f.StringVar(&cfg.Endpoint, "endpoint", cfg.Endpoint, "the interposer's DRA socket (default: interpose.sock beside the driver's endpoint)")
	f.StringVar(&cfg.Control, "control", cfg.Control, "control endpoint: a unix socket path or 127.0.0.1:PORT (default: none)")
	f.StringVar(&cfg.Records, "records", cfg.Records, "append every call as a JSON line to this file (default: in memory only)")
	f.StringVar(&cfg.RulesFile, "rules", cfg.RulesFile, "fault rules armed at start (YAML, apiVersion "+interpose.APIVersion+", kind "+interpose.Kind+")")
	f.DurationVar(&cfg.DriverWait, "driver-wait", cfg.DriverWait, "how long to wait for the driver's registration socket to answer")
}
