package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"drakit.dev/drakit/cluster"
	"drakit.dev/drakit/internal/shellquote"
)

// bindClusterFlags maps every field of cluster.Config onto a flag.
func bindClusterFlags(fs *pflag.FlagSet, cfg *cluster.Config) {
	fs.StringVar(&cfg.RunDir, "run-dir", cfg.RunDir, "all cluster state: PKI, etcd data, containerd, kubelet root, logs, CDI dir, emulator root (removed by down)")
	fs.StringVar(&cfg.ComponentsDir, "components-dir", cfg.ComponentsDir, "built components, <name>-<version>/bin each (scripts/build-components.sh)")
	fs.StringVar(&cfg.ImagesDir, "images-dir", cfg.ImagesDir, "docker-archive images imported on up (the pause image is built here when missing)")
	fs.StringVar(&cfg.KubernetesVersion, "kubernetes-version", cfg.KubernetesVersion, "Kubernetes component version")
	fs.StringVar(&cfg.EtcdVersion, "etcd-version", cfg.EtcdVersion, "etcd version")
	fs.StringVar(&cfg.ContainerdVersion, "containerd-version", cfg.ContainerdVersion, "containerd version")
	fs.StringVar(&cfg.CrictlVersion, "crictl-version", cfg.CrictlVersion, "crictl version")
	fs.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "node 1's name: an IPv4 literal in 127.0.0.0/8; node i is named this address plus i-1")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, fmt.Sprintf("number of nodes (1..%d), each a kubelet with its own containerd; up only (without it, up keeps a running cluster's): down, status and logs act on the nodes up started", cluster.MaxNodes))
	fs.StringVar(&cfg.ServiceCIDR, "service-cidr", cfg.ServiceCIDR, "service cluster IP range (required by the apiserver; never routed)")
	fs.StringVar(&cfg.CgroupRoot, "cgroup-root", cfg.CgroupRoot, "node 1's kubelet top-level cgroup (node i: <cgroup-root>-<i>), created by up and removed by down")
	fs.StringVar(&cfg.KubeletRootBase, "kubelet-root-base", cfg.KubeletRootBase, fmt.Sprintf("where up mounts node i's kubelet root dir, at k<i>: short, so that DRA drivers' per-pod sockets fit for driver names of %d bytes and more", cluster.DriverNameReserve))
	fs.IntVar(&cfg.APIServerPort, "apiserver-port", cfg.APIServerPort, "kube-apiserver secure port")
	fs.IntVar(&cfg.EtcdClientPort, "etcd-client-port", cfg.EtcdClientPort, "etcd client port")
	fs.IntVar(&cfg.EtcdPeerPort, "etcd-peer-port", cfg.EtcdPeerPort, "etcd peer port")
	fs.IntVar(&cfg.EtcdMetricsPort, "etcd-metrics-port", cfg.EtcdMetricsPort, "etcd metrics port")
	fs.IntVar(&cfg.ControllerManagerPort, "controller-manager-port", cfg.ControllerManagerPort, "kube-controller-manager secure port")
	fs.IntVar(&cfg.SchedulerPort, "scheduler-port", cfg.SchedulerPort, "kube-scheduler secure port")
	fs.IntVar(&cfg.KubeletPort, "kubelet-port", cfg.KubeletPort, "kubelet port")
	fs.IntVar(&cfg.KubeletHealthzPort, "kubelet-healthz-port", cfg.KubeletHealthzPort, "kubelet healthz port")
	fs.StringVar(&cfg.FeatureGates, "feature-gates", cfg.FeatureGates, "feature gates of every component (Name=bool,...)")
	fs.StringVar(&cfg.RuntimeConfig, "runtime-config", cfg.RuntimeConfig, "apiserver --runtime-config (group/version=bool,...)")
	fs.IntVar(&cfg.Verbosity, "component-verbosity", cfg.Verbosity, "--v of every component")
	fs.DurationVar(&cfg.StartTimeout, "start-timeout", cfg.StartTimeout, "how long up waits for each component and for the Node")
	fs.DurationVar(&cfg.StopTimeout, "stop-timeout", cfg.StopTimeout, "how long down waits after SIGTERM before SIGKILL")
	fs.DurationVar(&cfg.PodDeleteTimeout, "pod-delete-timeout", cfg.PodDeleteTimeout, "how long down waits for pods to terminate before forcing")
	if cfg.EmulatorNRIPlugin == "" {
		// This drakit: containerd runs its `emulator nri-plugin`.
		if exe, err := os.Executable(); err == nil {
			cfg.EmulatorNRIPlugin = exe
		}
	}
	fs.StringVar(&cfg.EmulatorNRIPlugin, "emulator-nri-plugin", cfg.EmulatorNRIPlugin,
		"the drakit executable whose 'emulator nri-plugin' every node's containerd runs, so that a container given an emulated GPU gets NVML whatever the driver's CDI edits hold (empty: NRI off)")
}

func newClusterCommand() *cobra.Command {
	cfg := cluster.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run the local Kubernetes cluster (processes on 127.0.0.0/8, needs root)",
		Long: `The local cluster runs etcd, kube-apiserver, kube-controller-manager and
kube-scheduler on 127.0.0.1, and --nodes nodes (default 1), each a kubelet with
its own containerd. Node i is named --node-name plus i-1 (127.0.0.1, 127.0.0.2,
...), its kubelet serves on that address (ports --kubelet-port and
--kubelet-healthz-port on every node) in cgroup root --cgroup-root (node i > 1:
<cgroup-root>-<i>). Node 1 keeps its state directly in the run dir; node i > 1
in <run-dir>/nodes/<i>, with the same layout: kubelet/root (the kubelet root
dir's store), cdi (CDI dir), emulator (emulator root), containerd/containerd.sock,
logs. Node i's kubelet root dir is its store mounted at <kubelet-root-base>/k<i>
(/run/drakit/k1, ...): DRA drivers put their sockets below it, and a per-pod
socket <root>/plugins/<driver>/dra-<pod UID>.sock must fit the 107-byte unix
socket limit. Every node's containerd imports the images dir.

'status -o env' prints node 1's paths as DRAKIT_CDI_DIR, DRAKIT_KUBELET_ROOT_DIR,
DRAKIT_EMULATOR_ROOT, DRAKIT_CONTAINERD_SOCKET and DRAKIT_NODE_NAME, the longest
driver name whose per-pod sockets fit on every node as DRAKIT_MAX_DRIVER_NAME, the node
names as DRAKIT_NODES="127.0.0.1 127.0.0.2 ...", and every node i's as
DRAKIT_NODE_<i>_NAME, DRAKIT_NODE_<i>_KUBELET_ROOT_DIR, DRAKIT_NODE_<i>_CDI_DIR,
DRAKIT_NODE_<i>_EMULATOR_ROOT and DRAKIT_NODE_<i>_CONTAINERD_SOCKET
('status -o json' has them under "nodes").`,
	}
	bindClusterFlags(cmd.PersistentFlags(), &cfg)

	cmd.AddCommand(&cobra.Command{
		Use:   "up",
		Short: "Start the cluster (--nodes N), or confirm it is up; writes <run-dir>/kubeconfig",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// Without --nodes, up confirms (or restarts) the cluster with
			// the nodes it has.
			if f := c.Flag("nodes"); f != nil && !f.Changed {
				n, ok, err := cluster.RecordedNodes(cfg)
				if err != nil {
					return err
				}
				if ok {
					cfg.Nodes = n
				}
			}
			return cluster.Up(c.Context(), cfg)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "down",
		Short: "Delete all pods, stop every component of every node, unmount, remove cgroups and the run dir",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return cluster.Down(c.Context(), cfg) },
	})

	var output string
	status := &cobra.Command{
		Use:   "status",
		Short: "Show components, every node and the paths other tools need (-o json|env for scripts)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := cluster.Status(c.Context(), cfg)
			if err != nil {
				return err
			}
			return printStatus(c.OutOrStdout(), st, output)
		},
	}
	status.Flags().StringVarP(&output, "output", "o", "text", "text, json, or env (shell assignments DRAKIT_*=...)")
	cmd.AddCommand(status)

	var tail, node int
	logs := &cobra.Command{
		Use:       "logs [component]",
		Short:     "Print the end of a component's log (all components without an argument; --node i: node i's containerd and kubelet)",
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: cluster.Components(),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				s, err := cluster.NodeLogs(cfg, node, args[0], tail)
				if err != nil {
					return err
				}
				_, err = io.WriteString(c.OutOrStdout(), s)
				return err
			}
			for _, name := range cluster.Components() {
				s, err := cluster.NodeLogs(cfg, node, name, tail)
				if err != nil {
					s = err.Error() + "\n"
				}
				if _, err := fmt.Fprintf(c.OutOrStdout(), "==> %s <==\n%s\n", name, s); err != nil {
					return err
				}
			}
			return nil
		},
	}
	logs.Flags().IntVar(&tail, "tail", 50, "number of lines from the end (0: all)")
	logs.Flags().IntVar(&node, "node", 1, "the node (index from 1) whose containerd and kubelet logs to print")
	cmd.AddCommand(logs)
	return cmd
}

func printStatus(w io.Writer, st cluster.State, output string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	case "env":
		for _, kv := range []struct{ k, v string }{
			{"DRAKIT_CLUSTER_UP", strconv.FormatBool(st.Up)},
			{"DRAKIT_RUN_DIR", st.RunDir},
			{"DRAKIT_KUBECONFIG", st.Kubeconfig},
			{"DRAKIT_APISERVER", st.APIServer},
			{"DRAKIT_CDI_DIR", st.CDIDir},
			{"DRAKIT_KUBELET_ROOT_DIR", st.KubeletRootDir},
			{"DRAKIT_MAX_DRIVER_NAME", strconv.Itoa(st.MaxDriverName)},
			{"DRAKIT_EMULATOR_ROOT", st.EmulatorRoot},
			{"DRAKIT_IMAGES_DIR", st.ImagesDir},
			{"DRAKIT_CONTAINERD_SOCKET", st.ContainerdSocket},
			{"DRAKIT_KUBECTL", st.Kubectl},
			{"DRAKIT_NODE_NAME", st.NodeName},
		} {
			if _, err := fmt.Fprintf(w, "%s=%s\n", kv.k, shellquote.Quote(kv.v)); err != nil {
				return err
			}
		}
		return printNodesEnv(w, st.Nodes)
	case "text":
		state := "down"
		if st.Up {
			state = "up"
		}
		if len(st.Nodes) > 1 {
			fmt.Fprintf(w, "cluster %s, %d nodes\n\n", state, len(st.Nodes))
		} else {
			fmt.Fprintf(w, "cluster %s, node %s %s\n\n", state, st.NodeName, st.NodeState)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "COMPONENT\tPID\tRUNNING\tHEALTHY\tRSS\tDETAIL")
		row := func(name string, c cluster.ComponentState) {
			pid, rss := "-", "-"
			if c.Running {
				pid, rss = strconv.Itoa(c.PID), fmt.Sprintf("%d MiB", c.RSSBytes>>20)
			}
			fmt.Fprintf(tw, "%s\t%s\t%t\t%t\t%s\t%s\n", name, pid, c.Running, c.Healthy, rss, c.Detail)
		}
		if len(st.Nodes) > 1 {
			for _, c := range st.Components[:len(st.Components)-len(st.Nodes[0].Components)] {
				row(c.Name, c)
			}
			for _, n := range st.Nodes {
				for _, c := range n.Components {
					row(c.Name+"@"+n.Name, c)
				}
			}
		} else {
			for _, c := range st.Components {
				row(c.Name, c)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(st.Nodes) > 1 {
			fmt.Fprintln(w)
			tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NODE\tSTATE\tKUBELET ROOT DIR\tCDI DIR\tEMULATOR ROOT")
			for _, n := range st.Nodes {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Name, n.State, n.KubeletRootDir, n.CDIDir, n.EmulatorRoot)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		images := "none imported"
		if len(st.Images) > 0 {
			images = strings.Join(st.Images, " ")
		}
		_, err := fmt.Fprintf(w, "\nkubeconfig        %s\napiserver         %s\nCDI dir           %s\nkubelet root dir  %s\nmax driver name   %d bytes (per-pod DRA sockets fit on every node)\nemulator root     %s\nimages dir        %s\nimages            %s\ncontainerd socket %s\nkubectl           %s\n",
			st.Kubeconfig, st.APIServer, st.CDIDir, st.KubeletRootDir, st.MaxDriverName, st.EmulatorRoot, st.ImagesDir, images, st.ContainerdSocket, st.Kubectl)
		return err
	}
	return fmt.Errorf("--output %q: want text, json or env", output)
}

// printNodesEnv prints DRAKIT_NODES and every node's DRAKIT_NODE_<i>_*
// variables.
func printNodesEnv(w io.Writer, nodes []cluster.NodeState) error {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	if _, err := fmt.Fprintf(w, "DRAKIT_NODES=%s\n", shellquote.Quote(strings.Join(names, " "))); err != nil {
		return err
	}
	for _, n := range nodes {
		prefix := "DRAKIT_NODE_" + strconv.Itoa(n.Index) + "_"
		for _, kv := range []struct{ k, v string }{
			{"NAME", n.Name}, {"KUBELET_ROOT_DIR", n.KubeletRootDir}, {"CDI_DIR", n.CDIDir},
			{"EMULATOR_ROOT", n.EmulatorRoot}, {"CONTAINERD_SOCKET", n.ContainerdSocket},
		} {
			if _, err := fmt.Fprintf(w, "%s%s=%s\n", prefix, kv.k, shellquote.Quote(kv.v)); err != nil {
				return err
			}
		}
	}
	return nil
}
