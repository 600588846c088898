package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/environment"
	"drakit.dev/drakit/internal/procstat"
)

// TestLifecycleFlagsNameTheFlag: bad lifecycle flags of drakit conformance
// and drakit env fail before anything is set up, naming the flag: a flag
// the provider or the verb does not take too.
func TestLifecycleFlagsNameTheFlag(t *testing.T) {
	t.Setenv("DRAKIT_KUBECONFIG", "")
	decl := "../../docs/examples/reference-driver.yaml"
	tests := map[string]struct {
		env  bool
		args []string
		want string
	}{
		"conformance unknown provider":  {args: []string{"--provider", "minikube", "--driver-config", decl}, want: `--provider: unknown cluster provider "minikube" (known: existing, kind, local)`},
		"environment unknown provider":  {env: true, args: []string{"up", "--provider", "minikube"}, want: `--provider: unknown cluster provider "minikube"`},
		"unknown driver":                {args: []string{"--provider", "local", "--deploy", "gpu,fpga", "--driver-config", decl}, want: `--deploy "fpga": unknown driver (want gpu, nic, cpu, tpu, or none)`},
		"both profiles":                 {env: true, args: []string{"up", "--emulator-profile", "dgx-h100", "--cluster-profile", "conformance-fabric"}, want: "--cluster-profile conformance-fabric: not with --emulator-profile dgx-h100"},
		"reuse with a profile":          {args: []string{"--provider", "local", "--reuse-environment", "--emulator-profile", "dgx-h100", "--driver-config", decl}, want: "--emulator-profile: not with --reuse-environment"},
		"reuse on existing":             {args: []string{"--kubeconfig", "/k", "--reuse-environment", "--driver-config", decl}, want: "--reuse-environment: not with --provider existing"},
		"imex without gpu":              {env: true, args: []string{"up", "--deploy", "tpu", "--imex-channels", "8"}, want: "--imex-channels 8: only with --deploy gpu"},
		"existing with cluster profile": {args: []string{"--kubeconfig", "/k", "--cluster-profile", "conformance-fabric", "--driver-config", decl}, want: "--cluster-profile: not with --provider existing"},
		"existing with a profile":       {args: []string{"--kubeconfig", "/k", "--emulator-profile", "dgx-h100", "--driver-config", decl}, want: "--emulator-profile: not with --provider existing"},
		"existing with drivers":         {env: true, args: []string{"up", "--provider", "existing", "--deploy", "gpu"}, want: "--deploy: not with --provider existing"},
		"local without a driver":        {args: []string{"--provider", "local"}, want: "DriverName: required"},
		"kind image on local":           {args: []string{"--provider", "local", "--kind-node-image", "x", "--driver-config", decl}, want: "--kind-node-image: only with --provider kind"},
		"kind workers on existing":      {env: true, args: []string{"up", "--provider", "existing", "--kind-workers", "1"}, want: "--kind-workers: only with --provider kind"},
		"kind negative workers":         {env: true, args: []string{"up", "--provider", "kind", "--kind-workers", "-1"}, want: "--kind-workers -1: must not be negative"},
		"env nodes on kind":             {env: true, args: []string{"up", "--provider", "kind", "--nodes", "2"}, want: "--nodes: only with --provider local"},
		"env kubelet root on existing":  {env: true, args: []string{"down", "--provider", "existing", "--kubelet-root-base", "/k"}, want: "--kubelet-root-base: only with --provider local"},
		"conformance run dir on kind":   {args: []string{"--provider", "kind", "--run-dir", "/r", "--driver-config", decl}, want: "--run-dir: only with --provider local"},
		"env deploy on down":            {env: true, args: []string{"down", "--deploy", "gpu"}, want: "--deploy: only with 'drakit env up', not down"},
		"env keep on up":                {env: true, args: []string{"up", "--keep-cluster"}, want: "--keep-cluster: only with 'drakit env down', not up"},
		"env artifacts on status":       {env: true, args: []string{"status", "--artifacts", "/a"}, want: "--artifacts: only with 'drakit env down', not status"},
		"env status output":             {env: true, args: []string{"status", "-o", "yaml"}, want: `--output "yaml": want text, json, env`},
		"env logs on kind":              {env: true, args: []string{"logs", "--provider", "kind"}, want: "--provider kind: logs prints the local cluster's logs"},
		"env unknown provider status":   {env: true, args: []string{"status", "--provider", "minikube"}, want: `--provider: unknown cluster provider "minikube"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cmd := newConformanceCommand()
			args := append(tc.args, "--artifacts", t.TempDir())
			if tc.env {
				cmd, args = newEnvCommand(), tc.args
			}
			cmd.SetArgs(args)
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestWatchFlags(t *testing.T) {
	for args, want := range map[string]string{
		"--root /r --detach --stop --pid-file /p": "--detach and --stop: give one",
		"--root /r --detach --log /l":             "--pid-file: required with --detach and --stop",
		"--root /r --stop":                        "--pid-file: required",
		"--root /r --detach --pid-file /p":        "--log: required with --detach",
		"--root /r --log /l":                      "--log: only with --detach",
	} {
		cmd := newEmulatorWatchCommand()
		cmd.SetArgs(strings.Fields(args))
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("watch %s: %v, want %q", args, err, want)
		}
	}
}

func TestIsWatcherOf(t *testing.T) {
	argv := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	for cmdline, want := range map[string]bool{
		"/usr/bin/drakit emulator watch --root /r --pid-file /p": true,
		"/usr/bin/drakit emulator watch --root /r2":              false,
		"/usr/bin/drakit emulator render --root /r":              false,
		"/usr/bin/sleep 100":                                     false,
		"/usr/bin/drakit emulator watch":                         false,
	} {
		if got := isWatcherOf(argv(cmdline), "/r"); got != want {
			t.Errorf("isWatcherOf(%q, /r) = %t, want %t", cmdline, got, want)
		}
	}
}

// TestStopWatcher: --stop signals the process its PID file names only when
// its command line is a watcher of the root, and removes the PID file.
func TestStopWatcher(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "emulator.watch.pid")
	// A shell whose command line reads "... emulator watch --root <dir>".
	watcher := exec.Command("sh", "-c", "sleep 30; true", "emulator", "watch", "--root", dir)
	if err := watcher.Start(); err != nil {
		t.Fatal(err)
	}
	defer watcher.Process.Kill()
	done := make(chan struct{})
	go func() { _ = watcher.Wait(); close(done) }()
	write := func(pid int) {
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A PID file of another root's watcher: removed, the process left.
	write(watcher.Process.Pid)
	var out bytes.Buffer
	if err := stopWatcher(ctx, pidFile, filepath.Join(dir, "other"), &out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("PID file of no watcher of the root still there (%v)", err)
	}
	if procstat.Exited(watcher.Process.Pid) {
		t.Fatal("stopped a process that is no watcher of the root")
	}

	write(watcher.Process.Pid)
	if err := stopWatcher(ctx, pidFile, dir, &out); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not stop")
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("PID file still there after the stop (%v)", err)
	}
	if !strings.Contains(out.String(), "stopped (PID "+strconv.Itoa(watcher.Process.Pid)+")") {
		t.Errorf("output %q does not say it stopped the watcher", out.String())
	}
	// No PID file: nothing to do.
	if err := stopWatcher(ctx, pidFile, dir, &out); err != nil {
		t.Errorf("without a PID file: %v", err)
	}
}

// TestWithEnvironment: on the local cluster the run gets the provider's
// kubeconfig and node 1's paths for every --node-* flag not given, and on
// two nodes each node's emulator root; existing changes nothing.
func TestWithEnvironment(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	lf := newLifecycleFlags("local")
	lf.local.RunDir, lf.local.Nodes = filepath.Join(t.TempDir(), "run"), 2
	lf.deploy = []string{"none"}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	lf.bind(fs)
	lf.bindLocalFlags(fs)
	env, err := lf.environment(fs, bindKubeFlags(fs), "")
	if err != nil {
		t.Fatal(err)
	}
	ecfg := envconf.New().WithKubeconfigFile("/run/kubeconfig")
	cfg := conformance.DefaultConfig()
	cfg.NodeCDIDir = "/given"
	changed := func(flag string) bool { return flag == "node-cdi-dir" }
	got, err := withEnvironment(ctx, cfg, env, ecfg, "local", changed)
	if err != nil {
		t.Fatal(err)
	}
	run := lf.local.RunDir
	want := cfg
	want.Kubeconfig, want.NodeName, want.NodeCgroupRoot = "/run/kubeconfig", "127.0.0.1", "/sys/fs/cgroup"
	want.NodeKubeletRootDir, want.NodeEmulatorRoot = filepath.Join(lf.local.KubeletRootBase, "k1"), filepath.Join(run, "emulator")
	want.NodeSysfsRoot = filepath.Join(run, "emulator/sys")
	want.ProbeHostNetwork = true // the local cluster has no pod network
	want.NodeEmulatorRoots = map[string]string{"127.0.0.1": filepath.Join(run, "emulator"), "127.0.0.2": filepath.Join(run, "nodes/2/emulator")}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(conformance.Config{}, "Output", "TestingT")); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if same, err := withEnvironment(ctx, cfg, env, ecfg, "existing", changed); err != nil || same.Kubeconfig != cfg.Kubeconfig || same.NodeEmulatorRoot != "" {
		t.Errorf("existing changed the config: %+v %v", same, err)
	}
}

// TestClusterProfileFlags: --cluster-profile replaces the default node
// profile, and --deploy gpu,tpu --imex-channels deploys the GPU driver with
// its IMEX controller and the TPU driver, in that order.
func TestClusterProfileFlags(t *testing.T) {
	lf := newLifecycleFlags("local")
	lf.local.RunDir = filepath.Join(t.TempDir(), "run")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	lf.bind(fs)
	lf.bindLocalFlags(fs)
	if err := fs.Parse([]string{"--cluster-profile", "conformance-fabric", "--deploy", "tpu,gpu", "--imex-channels", "8", "--images-dir", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	env, err := lf.environment(fs, bindKubeFlags(fs), "")
	if err != nil {
		t.Fatalf("environment: %v", err)
	}
	if hw := env.Hardware(); hw != (environment.Hardware{ClusterProfile: "conformance-fabric"}) {
		t.Errorf("renders %+v, want only the cluster profile", hw)
	}
	drivers, err := lf.drivers()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range drivers {
		names = append(names, d.Name)
	}
	if !slices.Equal(names, []string{"gpu", "tpu"}) {
		t.Errorf("drivers %q, want gpu then tpu", names)
	}
}

// TestWithKindNodes: on kind the run reads the node's emulator root, sysfs,
// CDI dir and kubelet root dir through the host directories mounted in the
// node and its cgroups in the host's cgroup file system, its probe pods
// reach the API server at the control plane's address on the kind network;
// given flags win.
func TestWithKindNodes(t *testing.T) {
	cfg := conformance.DefaultConfig()
	cfg.APIServerPort = 1234
	nodes := []environment.Node{environment.KindNode("drakit-control-plane", "/state", "172.18.0.2", 6443)}
	got := withNodes(cfg, nodes, func(flag string) bool { return flag == "apiserver-port" })
	want := cfg
	want.NodeEmulatorRoot, want.NodeSysfsRoot = "/state/drakit-control-plane/emulator", "/state/drakit-control-plane/emulator/sys"
	want.NodeCDIDir, want.APIServerHost = "/state/drakit-control-plane/cdi", "172.18.0.2"
	want.NodeKubeletRootDir, want.NodeCgroupRoot = "/state/drakit-control-plane/kubelet", "/sys/fs/cgroup"
	want.NodeHostPaths = map[string]string{
		"/var/lib/drakit/emulator": "/state/drakit-control-plane/emulator",
		"/var/run/cdi":             "/state/drakit-control-plane/cdi",
		"/var/lib/kubelet":         "/state/drakit-control-plane/kubelet",
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(conformance.Config{}, "Output", "TestingT")); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	cfg.NodeKubeletRootDir = "/given"
	if got := withNodes(cfg, nodes, func(flag string) bool { return flag == "node-kubelet-root-dir" }); got.NodeKubeletRootDir != "/given" {
		t.Errorf("--node-kubelet-root-dir given: kubelet root dir %q, want /given", got.NodeKubeletRootDir)
	}
	cfg.NodeKubeletRootDir = ""
	// Two nodes: node 1 is the one read, every node's root is listed.
	nodes = append(nodes, environment.KindNode("drakit-worker", "/state", "172.18.0.2", 6443))
	got = withNodes(cfg, nodes, func(string) bool { return false })
	if got.NodeName != "drakit-control-plane" || got.NodeEmulatorRoots["drakit-worker"] != "/state/drakit-worker/emulator" || got.APIServerPort != 6443 {
		t.Errorf("two kind nodes: node %q roots %v port %d", got.NodeName, got.NodeEmulatorRoots, got.APIServerPort)
	}
}

// TestKindProviderFlags: --provider kind takes the kind flags (a relative
// state dir too) and builds its environment; the defaults are the offline
// node image on one node; the kind lane's --kind-node-image is a flag of
// drakit conformance.
func TestKindProviderFlags(t *testing.T) {
	lf := newLifecycleFlags("kind")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	lf.bind(fs)
	lf.bindLocalFlags(fs)
	if err := fs.Parse([]string{"--kind-node-image", "img:1", "--kind-workers", "1", "--kind-state-dir", "rel", "--images-dir", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if lf.kind.NodeImage != "img:1" || lf.kind.Workers != 1 || !lf.kind.Offline {
		t.Errorf("kind options %+v", lf.kind)
	}
	env, err := lf.environment(fs, bindKubeFlags(fs), "")
	if err != nil || env == nil {
		t.Fatalf("environment: %v", err)
	}
	d := newLifecycleFlags("kind")
	if d.kind.NodeImage != DefaultKindNodeImage || d.kind.Workers != 0 || !filepath.IsAbs(d.kind.StateDir) {
		t.Errorf("kind defaults %+v", d.kind)
	}
	workflow, err := os.ReadFile("../../.github/workflows/kind.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(workflow), "scripts/conformance-kind.sh") {
		t.Error("the kind lane does not run scripts/conformance-kind.sh")
	}
}

// TestKindScriptFlags: every flag scripts/conformance-kind.sh passes to
// drakit conformance (summarize), drakit env or drakit driver is one of
// theirs.
func TestKindScriptFlags(t *testing.T) {
	script, err := os.ReadFile("../../scripts/conformance-kind.sh")
	if err != nil {
		t.Fatal(err)
	}
	driverDeploy, _, err := newDriverCommand().Find([]string{"deploy"})
	if err != nil {
		t.Fatal(err)
	}
	sets := []*pflag.FlagSet{
		newConformanceCommand().Flags(), newEnvCommand().PersistentFlags(),
		newConformanceSummarizeCommand().Flags(), driverDeploy.InheritedFlags(), driverDeploy.Flags(),
	}
	known := func(name string) bool {
		return slices.ContainsFunc(sets, func(fs *pflag.FlagSet) bool { return fs.Lookup(name) != nil })
	}
	flagRE := regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	seen := 0
	inDrakit := false
	for _, line := range strings.Split(string(script), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.Contains(line, "$drakit ") || strings.HasPrefix(trimmed, "kind=(") {
			inDrakit = true
		}
		if !inDrakit {
			continue
		}
		for _, m := range flagRE.FindAllStringSubmatch(line, -1) {
			seen++
			if !known(m[1]) {
				t.Errorf("scripts/conformance-kind.sh passes --%s, which no drakit command it runs has: %s", m[1], trimmed)
			}
		}
		inDrakit = strings.HasSuffix(trimmed, "\\")
	}
	if seen < 10 {
		t.Errorf("found %d flags in the script's drakit command lines: the scan missed them", seen)
	}
}
