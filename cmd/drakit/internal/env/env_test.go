package env

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"drakit.dev/drakit/cluster"
	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
	"drakit.dev/drakit/environment"
	"drakit.dev/drakit/internal/kubeconfigtest"
)

// TestStatusEnvOutputIsShell checks that `status -o env` output, evaluated
// by sh, yields the paths verbatim, quotes included.
func TestStatusEnvOutputIsShell(t *testing.T) {
	st := cluster.State{Up: true, RunDir: "/tmp/it's here", Kubeconfig: "/a b/kubeconfig", CDIDir: "/c$HOME", EmulatorRoot: "/e", KubeletRootDir: "/k"}
	var buf bytes.Buffer
	if err := printStatus(&buf, st, "env"); err != nil {
		t.Fatal(err)
	}
	script := buf.String() + `printf '%s\n' "$DRAKIT_CLUSTER_UP" "$DRAKIT_RUN_DIR" "$DRAKIT_KUBECONFIG" "$DRAKIT_CDI_DIR" "$DRAKIT_EMULATOR_ROOT" "$DRAKIT_KUBELET_ROOT_DIR"`
	out, err := exec.Command("sh", "-c", script).Output()
	if err != nil {
		t.Fatalf("sh: %v\n%s", err, script)
	}
	want := "true\n/tmp/it's here\n/a b/kubeconfig\n/c$HOME\n/e\n/k\n"
	if string(out) != want {
		t.Errorf("evaluated env output = %q, want %q", out, want)
	}
	if err := printStatus(&buf, st, "yaml"); err == nil || !strings.Contains(err.Error(), "yaml") {
		t.Errorf("unknown output format: err %v", err)
	}
}

// TestStatusEnvListsEveryNode checks that `status -o env` of a multi-node
// cluster keeps node 1's variables and adds DRAKIT_NODES and every node's
// DRAKIT_NODE_<i>_* paths, as sh sees them.
func TestStatusEnvListsEveryNode(t *testing.T) {
	cfg := cluster.DefaultConfig()
	cfg.RunDir, cfg.Nodes = "/run/d", 3
	st := cluster.State{NodeName: "127.0.0.1", KubeletRootDir: "/run/drakit/k1", CDIDir: "/run/d/cdi", MaxDriverName: 38}
	for _, n := range cluster.AllNodes(cfg) {
		st.Nodes = append(st.Nodes, cluster.NodeState{Node: n, State: "schedulable"})
	}
	var buf bytes.Buffer
	if err := printStatus(&buf, st, "env"); err != nil {
		t.Fatal(err)
	}
	script := buf.String() + `printf '%s\n' "$DRAKIT_NODE_NAME" "$DRAKIT_KUBELET_ROOT_DIR" "$DRAKIT_MAX_DRIVER_NAME" "$DRAKIT_NODES" "$DRAKIT_NODE_1_CDI_DIR" ` +
		`"$DRAKIT_NODE_3_NAME" "$DRAKIT_NODE_3_KUBELET_ROOT_DIR" "$DRAKIT_NODE_3_CDI_DIR" "$DRAKIT_NODE_3_EMULATOR_ROOT" "$DRAKIT_NODE_2_CONTAINERD_SOCKET"`
	out, err := exec.Command("sh", "-c", script).Output()
	if err != nil {
		t.Fatalf("sh: %v\n%s", err, script)
	}
	want := "127.0.0.1\n/run/drakit/k1\n38\n127.0.0.1 127.0.0.2 127.0.0.3\n/run/d/cdi\n" +
		"127.0.0.3\n/run/drakit/k3\n/run/d/nodes/3/cdi\n/run/d/nodes/3/emulator\n/run/d/nodes/2/containerd/containerd.sock\n"
	if string(out) != want {
		t.Errorf("evaluated env output = %q, want %q", out, want)
	}
	buf.Reset()
	if err := printStatus(&buf, st, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 nodes", "127.0.0.2  schedulable  /run/drakit/k2", "max driver name   38 bytes"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text status lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestEnvStateEnvOutput checks that `env status -o env` of a kind cluster,
// evaluated by sh, names the provider, the kubeconfig, every node and its
// paths in the node and on this host.
func TestEnvStateEnvOutput(t *testing.T) {
	st := environment.State{Running: true, Kubeconfig: "/state dir/kubeconfig", Nodes: []environment.Node{
		environment.KindNode("drakit-control-plane", "/state dir", "172.18.0.2", 6443),
		environment.KindNode("drakit-worker", "/state dir", "172.18.0.2", 6443),
	}}
	var buf bytes.Buffer
	if err := printEnvState(&buf, "kind", st, "env"); err != nil {
		t.Fatal(err)
	}
	script := buf.String() + `printf '%s\n' "$DRAKIT_PROVIDER" "$DRAKIT_CLUSTER_UP" "$DRAKIT_KUBECONFIG" "$DRAKIT_NODES" "$DRAKIT_NODE_2_NAME" "$DRAKIT_NODE_2_EMULATOR_ROOT" "$DRAKIT_NODE_2_HOST_EMULATOR_ROOT"`
	out, err := exec.Command("sh", "-c", script).Output()
	if err != nil {
		t.Fatalf("sh: %v\n%s", err, script)
	}
	want := "kind\ntrue\n/state dir/kubeconfig\ndrakit-control-plane drakit-worker\ndrakit-worker\n/var/lib/drakit/emulator\n/state dir/drakit-worker/emulator\n"
	if string(out) != want {
		t.Errorf("evaluated env output = %q, want %q", out, want)
	}
	buf.Reset()
	if err := printEnvState(&buf, "existing", environment.State{Detail: "the API server does not answer"}, "text"); err != nil || !strings.Contains(buf.String(), "cluster down (provider existing): the API server does not answer") {
		t.Errorf("text: %q, %v", buf.String(), err)
	}
}

// TestEnvClientFlags: env up and status with the existing provider check
// the cluster of --context (context b's server answers, the
// current-context's port is closed); an unknown context is an error naming
// it; local refuses --context and --request-timeout.
func TestEnvClientFlags(t *testing.T) {
	srv := clitest.ReadyButSlow(t)
	kubeconfig := kubeconfigtest.TwoContexts(t, "a", "http://127.0.0.1:1", srv.URL)
	for _, tc := range []struct {
		args    []string
		want    string // empty: success
		wantOut string
	}{
		{args: []string{"up", "--provider", "existing", "--context", "b", "--request-timeout", "5s"}, wantOut: "env up (provider existing)"},
		{args: []string{"status", "--provider", "existing", "--context", "b", "-o", "env"}, wantOut: "DRAKIT_CLUSTER_UP='true'\n"},
		{args: []string{"status", "--provider", "existing"}, wantOut: "cluster down (provider existing): the API server does not answer"},
		{args: []string{"up", "--provider", "existing", "--context", "nope"}, want: `context "nope" does not exist`},
		{args: []string{"up", "--provider", "local", "--context", "b", "--run-dir", filepath.Join(t.TempDir(), "run")}, want: "--context: not with --provider local"},
		{args: []string{"down", "--provider", "local", "--request-timeout", "5s", "--run-dir", filepath.Join(t.TempDir(), "run")}, want: "--request-timeout: not with --provider local"},
	} {
		cmd := NewCommand()
		cmd.SetArgs(append(tc.args, "--kubeconfig", kubeconfig))
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		switch {
		case tc.want == "" && (err != nil || !strings.Contains(out.String(), tc.wantOut)):
			t.Errorf("drakit env %s: %v, output %q; want success, %q", strings.Join(tc.args, " "), err, out.String(), tc.wantOut)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("drakit env %s: %v, want an error containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
