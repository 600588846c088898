// Package env is drakit env: the one way to bring a cluster up or down or
// ask its state (providers local, kind, existing), and the lifecycle flags
// that drakit conformance --provider shares.
package env

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"drakit.dev/drakit/cluster"
	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/environment"
	"drakit.dev/drakit/internal/shellquote"
)

// envVerbFlags are the flags that only some of drakit env's verbs take,
// with those verbs.
var envVerbFlags = map[string][]string{
	"emulator-profile": {"up"}, "cluster-profile": {"up"}, "imex-channels": {"up"}, "shim": {"up"},
	"deploy": {"up"}, "recreate": {"up"}, "cluster-config": {"up"},
	"keep-cluster": {"down"}, "artifacts": {"down"},
}

// checkVerbFlags refuses, naming it, a flag given to a verb that does not
// take it.
func checkVerbFlags(c *cobra.Command) error {
	verb := c.Name()
	var err error
	c.Flags().Visit(func(f *pflag.Flag) {
		if verbs, ok := envVerbFlags[f.Name]; ok && err == nil && !slices.Contains(verbs, verb) {
			err = fmt.Errorf("--%s: only with 'drakit env %s', not %s", f.Name, strings.Join(verbs, "|"), verb)
		}
	})
	return err
}

// NewCommand returns drakit env.
func NewCommand() *cobra.Command {
	lf := NewLifecycleFlags("local")
	// Up brings a bare cluster up unless told what to render and deploy
	// (drakit conformance --provider renders and deploys by default).
	lf.profile, lf.deploy = noProfile, []string{"none"}
	// Only where given: a down that copies logs into $ARTIFACTS unasked
	// would overwrite a run's.
	var artifacts string
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Bring a cluster up or down, or ask its state: drakit's local cluster, kind, or an existing one",
		Long: `env is the one way to bring a test cluster up, take it down or ask its
state: the kit's environment lifecycle (package environment, on
sigs.k8s.io/e2e-framework), which 'drakit conformance --provider' runs
around one run. Scripts set an environment up once and run many 'drakit
conformance' runs against it.

Providers (--provider):
  local     drakit's own cluster of processes on 127.0.0.0/8 (the default;
            needs root): etcd, kube-apiserver, kube-controller-manager and
            kube-scheduler on 127.0.0.1 and --nodes nodes, each a kubelet with
            its own containerd, all state in --run-dir. Its flags (--nodes,
            --run-dir, --components-dir, --kubelet-root-base, --emulator-nri-plugin,
            --pod-delete-timeout, the ports and versions, ...) only go with it.
  kind      a kind cluster in Docker from kind/cluster.yaml or --cluster-config,
            from the offline node image (--kind-node-image, built by
            scripts/kind-node-image.sh), --kind-workers workers, the host
            directories of the nodes in --kind-state-dir.
  existing  the cluster of --kubeconfig and --context, used as it is: up
            checks that its API server answers, down changes nothing; no
            hardware is rendered and no driver deployed.

Verbs:
  up      creates the cluster, or reuses the one that runs (--recreate tears
          it down first; without --nodes a running local cluster keeps its
          nodes); loads the archives of --images-dir (the local cluster
          imports them as it comes up). That is all by default: a bare
          cluster. With --emulator-profile (or --cluster-profile: each node's
          node of it) it renders the emulated hardware on every node, with the
          --shim NVML library, and starts the emulator's sriov_numvfs watcher
          on every node (its log: the node's logs, emulator-watch.log); with
          --deploy it deploys those reference drivers (gpu:
          --partitionable-alpha --list-attributes and --imex-channels, on the
          local cluster with RuntimeClass drakit-mig-manager; nic: 2 VFs per
          PF; cpu; tpu: its kubelet plugin and sub-slice controller), each
          waited for until it has published its slices. Where the nodes keep
          their paths apart (the local cluster's nodes), each driver is
          deployed once per node, pinned to it, and on the local cluster node
          i serves its /metrics and /healthz 10*(i-1) ports above the driver's
          default. It stops at the first step that fails; run down to clean
          up.
  down    every step whatever failed before: stops every node's watcher,
          exports the cluster's logs to --artifacts/logs (the local cluster's
          node i > 1 into logs/node-<i>), tears the cluster down unless
          --keep-cluster. The local cluster deletes its pods while the drivers
          can still unprepare (--pod-delete-timeout), stops every process it
          started, unmounts, removes its cgroups and the run dir; nothing
          without a run dir.
  status  whether the cluster runs, its kubeconfig and nodes; -o text, json or
          env (shell assignments DRAKIT_*=..., for eval). The local cluster's
          also has its components (PID, health, RSS) and paths: -o env prints
          node 1's as DRAKIT_CDI_DIR, DRAKIT_KUBELET_ROOT_DIR,
          DRAKIT_EMULATOR_ROOT, DRAKIT_CONTAINERD_SOCKET and DRAKIT_NODE_NAME,
          the longest driver name whose per-pod sockets fit on every node as
          DRAKIT_MAX_DRIVER_NAME, the node names as
          DRAKIT_NODES="127.0.0.1 127.0.0.2 ...", and every node i's as
          DRAKIT_NODE_<i>_NAME, _KUBELET_ROOT_DIR, _CDI_DIR, _EMULATOR_ROOT and
          _CONTAINERD_SOCKET (-o json: "nodes"). A kind cluster's nodes have
          their paths in the node and, where this host sees them,
          DRAKIT_NODE_<i>_HOST_EMULATOR_ROOT, _HOST_CDI_DIR and
          _HOST_KUBELET_ROOT_DIR.
  logs    the end of a local cluster component's log (--node i: node i's
          containerd and kubelet).

The local cluster: node i is named --node-name plus i-1 (127.0.0.1,
127.0.0.2, ...) and its kubelet serves on that address (ports --kubelet-port
and --kubelet-healthz-port on every node) in cgroup root --cgroup-root (node
i > 1: <cgroup-root>-<i>). Node 1 keeps its state directly in the run dir;
node i > 1 in <run-dir>/nodes/<i>, with the same layout: kubelet/root (the
kubelet root dir's store), cdi (CDI dir), emulator (emulator root),
containerd/containerd.sock, logs. Node i's kubelet root dir is its store
mounted at <kubelet-root-base>/k<i> (/run/drakit/k1, ...): DRA drivers put
their sockets below it, and a per-pod socket
<root>/plugins/<driver>/dra-<pod UID>.sock must fit the 107-byte unix socket
limit. Every node's containerd imports the images dir.

--kubeconfig, --context and --request-timeout name the existing provider's
cluster, as kubectl's do; the local and kind providers write their
cluster's kubeconfig, and refuse --context and --request-timeout. A flag
that the provider or the verb does not take is an error naming it.`,
		Example: `  # the local cluster alone, left running; its paths for scripts:
  drakit env up --images-dir _output/images
  eval "$(drakit env status -o env)"
  drakit env down
  # what make conformance sets up: the emulated node, three reference drivers
  drakit env up --provider local --recreate --images-dir _output/images \
    --emulator-profile dgx-a100-mig --deploy gpu,nic,cpu
  drakit env up --provider local --recreate --nodes 4 --images-dir _output/images \
    --cluster-profile conformance-fabric --deploy gpu,tpu --imex-channels 8
  drakit conformance --provider local --reuse-environment --driver-config docs/examples/reference-driver.yaml
  drakit env down --provider local --artifacts artifacts
  # kind
  drakit env up --provider kind --images-dir _output/images --emulator-profile dgx-a100-mig --deploy gpu
  drakit env status --provider kind -o env`,
	}
	fs := cmd.PersistentFlags()
	lf.Bind(fs)
	lf.bindClusterFlags(fs)
	kube := cli.BindKubeFlags(fs)
	kube.Register(cmd)
	fs.StringVar(&artifacts, "artifacts", artifacts, "down: directory whose logs/ receives the cluster's logs (empty: not exported)")
	_ = cmd.RegisterFlagCompletionFunc("provider", cobra.FixedCompletions(environment.ProviderNames(), cobra.ShellCompDirectiveNoFileComp)) // bound above
	// Every verb: the persistent pre-run of the root, then the verb's flags.
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if root := c.Root(); root != cmd && root.PersistentPreRunE != nil {
			if err := root.PersistentPreRunE(c, args); err != nil {
				return err
			}
		}
		return cli.UsageError(checkVerbFlags(c))
	}

	cmd.AddCommand(&cobra.Command{
		Use:   "up",
		Short: "Create or reuse the cluster and load the images; with --emulator-profile or --cluster-profile and --deploy, render the hardware, start the watchers, deploy the drivers",
		Args:  cli.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			env, err := lf.Environment(c.Flags(), kube, "")
			if err != nil {
				return cli.UsageError(err)
			}
			ecfg := envconf.New()
			if _, err := env.Up(c.Context(), ecfg); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "env up (provider %s), kubeconfig %s\n", lf.provider, ecfg.KubeconfigFile())
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "down",
		Short: "Stop the watchers, export the logs to --artifacts/logs, tear the cluster down (unless --keep-cluster)",
		Args:  cli.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			// What down does needs neither a profile nor drivers.
			lf.profile, lf.clusterProfile, lf.imexChannels, lf.deploy = "", "", 0, []string{"none"}
			env, err := lf.Environment(c.Flags(), kube, artifacts)
			if err != nil {
				return cli.UsageError(err)
			}
			return env.Down(c.Context(), envconf.New())
		},
	})

	var output string
	status := &cobra.Command{
		Use:   "status",
		Short: "Whether the cluster runs, its kubeconfig, nodes and (local) components and paths (-o json|env for scripts)",
		Args:  cli.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if !slices.Contains(statusOutputs, output) {
				return cli.UsageError(fmt.Errorf("--output %q: want %s", output, strings.Join(statusOutputs, ", ")))
			}
			lf.profile, lf.clusterProfile, lf.imexChannels, lf.deploy = "", "", 0, []string{"none"}
			env, err := lf.Environment(c.Flags(), kube, "")
			if err != nil {
				return cli.UsageError(err)
			}
			if lf.provider == "local" {
				st, err := cluster.Status(c.Context(), lf.local)
				if err != nil {
					return err
				}
				return printStatus(c.OutOrStdout(), st, output)
			}
			st, err := env.Status(c.Context())
			if err != nil {
				return err
			}
			return printEnvState(c.OutOrStdout(), lf.provider, st, output)
		},
	}
	status.Flags().StringVarP(&output, "output", "o", "text", "text, json, or env (shell assignments DRAKIT_*=...)")
	_ = status.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(statusOutputs, cobra.ShellCompDirectiveNoFileComp)) // bound above
	cmd.AddCommand(status)

	var tail, node int
	logs := &cobra.Command{
		Use:       "logs [component]",
		Short:     "Print the end of a local cluster component's log (all components without an argument; --node i: node i's containerd and kubelet)",
		Args:      cli.UsageArgs(cobra.MaximumNArgs(1)),
		ValidArgs: cluster.Components(),
		RunE: func(c *cobra.Command, args []string) error {
			if lf.provider != "local" {
				return cli.UsageError(fmt.Errorf("--provider %s: logs prints the local cluster's logs (a %s cluster's are exported by 'drakit env down --artifacts DIR')", lf.provider, lf.provider))
			}
			if len(args) == 1 {
				s, err := cluster.NodeLogs(lf.local, node, args[0], tail)
				if err != nil {
					return err
				}
				_, err = io.WriteString(c.OutOrStdout(), s)
				return err
			}
			for _, name := range cluster.Components() {
				s, err := cluster.NodeLogs(lf.local, node, name, tail)
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

// statusOutputs are the formats of drakit env status.
var statusOutputs = []string{"text", "json", "env"}

// printEnvState prints the state of a cluster of a provider other than
// local (whose cluster.State printStatus prints).
func printEnvState(w io.Writer, provider string, st environment.State, output string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Provider string `json:"provider"`
			environment.State
		}{provider, st})
	case "env":
		for _, kv := range []struct{ k, v string }{
			{"DRAKIT_PROVIDER", provider},
			{"DRAKIT_CLUSTER_UP", strconv.FormatBool(st.Running)},
			{"DRAKIT_KUBECONFIG", st.Kubeconfig},
		} {
			if _, err := fmt.Fprintf(w, "%s=%s\n", kv.k, shellquote.Quote(kv.v)); err != nil {
				return err
			}
		}
		names := make([]string, len(st.Nodes))
		for i, n := range st.Nodes {
			names[i] = n.Name
		}
		if _, err := fmt.Fprintf(w, "DRAKIT_NODES=%s\n", shellquote.Quote(strings.Join(names, " "))); err != nil {
			return err
		}
		for i, n := range st.Nodes {
			prefix := "DRAKIT_NODE_" + strconv.Itoa(i+1) + "_"
			for _, kv := range []struct{ k, v string }{
				{"NAME", n.Name}, {"KUBELET_ROOT_DIR", n.KubeletRootDir}, {"CDI_DIR", n.CDIDir}, {"EMULATOR_ROOT", n.EmulatorRoot},
				{"HOST_KUBELET_ROOT_DIR", n.HostKubeletRootDir}, {"HOST_CDI_DIR", n.HostCDIDir}, {"HOST_EMULATOR_ROOT", n.HostEmulatorRoot},
			} {
				if kv.v == "" {
					continue
				}
				if _, err := fmt.Fprintf(w, "%s%s=%s\n", prefix, kv.k, shellquote.Quote(kv.v)); err != nil {
					return err
				}
			}
		}
		return nil
	case "text":
		state := "down"
		if st.Running {
			state = "up"
		}
		fmt.Fprintf(w, "cluster %s (provider %s)", state, provider)
		if st.Detail != "" {
			fmt.Fprintf(w, ": %s", st.Detail)
		}
		kubeconfig := st.Kubeconfig
		if kubeconfig == "" {
			kubeconfig = "-"
		}
		fmt.Fprintf(w, "\nkubeconfig  %s\n", kubeconfig)
		if len(st.Nodes) == 0 {
			return nil
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tKUBELET ROOT DIR\tCDI DIR\tEMULATOR ROOT\tHOST EMULATOR ROOT")
		for _, n := range st.Nodes {
			host := n.HostEmulatorRoot
			if host == "" {
				host = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Name, n.KubeletRootDir, n.CDIDir, n.EmulatorRoot, host)
		}
		return tw.Flush()
	}
	return fmt.Errorf("--output %q: want %s", output, strings.Join(statusOutputs, ", "))
}

func printStatus(w io.Writer, st cluster.State, output string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	case "env":
		for _, kv := range []struct{ k, v string }{
			{"DRAKIT_PROVIDER", "local"},
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
