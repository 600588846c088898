package conformance

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"drakit.dev/drakit/cluster"
	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
	envcmd "drakit.dev/drakit/cmd/drakit/internal/env"
	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/environment"
	"drakit.dev/drakit/internal/kubeconfigtest"
)

// TestLifecycleFlagsNameTheFlag: bad lifecycle flags of drakit conformance
// fail before anything is set up, naming the flag (drakit env's: its
// package's test).
func TestLifecycleFlagsNameTheFlag(t *testing.T) {
	t.Setenv("DRAKIT_KUBECONFIG", "")
	decl := "../../../../docs/examples/reference-driver.yaml"
	tests := map[string]struct {
		args []string
		want string
	}{
		"existing with cluster profile": {args: []string{"--kubeconfig", "/k", "--cluster-profile", "conformance-fabric", "--driver-config", decl}, want: "--cluster-profile: not with --provider existing"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cmd := NewCommand()
			cmd.SetArgs(append(tc.args, "--artifacts", t.TempDir()))
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

// TestWithEnvironment: on the local cluster the run gets the provider's
// kubeconfig and node 1's paths for every --node-* flag not given, and on
// two nodes each node's emulator root; existing changes nothing.
func TestWithEnvironment(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	lf := envcmd.NewLifecycleFlags("local")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	lf.Bind(fs)
	lf.BindLocalFlags(fs)
	run := filepath.Join(t.TempDir(), "run")
	if err := fs.Parse([]string{"--run-dir", run, "--nodes", "2", "--deploy", "none"}); err != nil {
		t.Fatal(err)
	}
	env, err := lf.Environment(fs, cli.BindKubeFlags(fs), "")
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
	want := cfg
	want.Kubeconfig, want.NodeName, want.NodeCgroupRoot = "/run/kubeconfig", "127.0.0.1", "/sys/fs/cgroup"
	want.NodeKubeletRootDir, want.NodeEmulatorRoot = filepath.Join(cluster.DefaultConfig().KubeletRootBase, "k1"), filepath.Join(run, "emulator")
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

// TestConformanceClientFlags: the kit's Config gets --context and
// --request-timeout; run against a kubeconfig whose current-context is a
// closed port, --context b reaches context b's server (it passes the
// existing provider's check, then the kit's preflight gives up after the
// request timeout, not the minute of --api-timeout); an unknown context or
// a bad timeout is an error naming it; local and kind refuse both flags.
func TestConformanceClientFlags(t *testing.T) {
	t.Setenv("DRAKIT_KUBECONFIG", "")
	cfg := conformance.DefaultConfig()
	fs := pflag.NewFlagSet("conformance", pflag.ContinueOnError)
	bindConformanceFlags(fs, &cfg)
	if err := fs.Parse([]string{"--kubeconfig", "/k", "--context", "b", "--request-timeout", "5"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Kubeconfig != "/k" || cfg.KubeContext != "b" || cfg.RequestTimeout != 5*time.Second {
		t.Errorf("config: kubeconfig %q, context %q, request timeout %v; want /k, b, 5s", cfg.Kubeconfig, cfg.KubeContext, cfg.RequestTimeout)
	}

	srv := clitest.ReadyButSlow(t)
	kubeconfig := kubeconfigtest.TwoContexts(t, "a", "http://127.0.0.1:1", srv.URL)
	declared := []string{"--kubeconfig", kubeconfig, "--driver-config", "../../../../docs/examples/env-only-driver.yaml", "--api-timeout", "1m"}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"context b":               {args: []string{"--context", "b", "--request-timeout", "300ms"}, want: "reach API server " + srv.URL},
		"unknown context":         {args: []string{"--context", "nope"}, want: `context "nope" does not exist`},
		"bad request timeout":     {args: []string{"--request-timeout", "bogus"}, want: `invalid argument "bogus" for "--request-timeout" flag`},
		"context with local":      {args: []string{"--provider", "local", "--context", "b"}, want: "--context: not with --provider local"},
		"request timeout w/ kind": {args: []string{"--provider", "kind", "--request-timeout", "5s"}, want: "--request-timeout: not with --provider kind"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := NewCommand()
			cmd.SetArgs(append(append(declared, tc.args...), "--artifacts", t.TempDir()))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			start := time.Now()
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to fail", d)
			}
		})
	}
}
