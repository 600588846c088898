package env

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/environment"
)

// TestLifecycleFlagsNameTheFlag: bad lifecycle flags of drakit env fail
// before anything is set up, naming the flag: a flag the provider or the
// verb does not take too (drakit conformance's: its package's test).
func TestLifecycleFlagsNameTheFlag(t *testing.T) {
	t.Setenv("DRAKIT_KUBECONFIG", "")
	tests := map[string]struct {
		args []string
		want string
	}{
		"environment unknown provider": {args: []string{"up", "--provider", "minikube"}, want: `--provider: unknown cluster provider "minikube"`},
		"both profiles":                {args: []string{"up", "--emulator-profile", "dgx-h100", "--cluster-profile", "conformance-fabric"}, want: "--cluster-profile conformance-fabric: not with --emulator-profile dgx-h100"},
		"imex without gpu":             {args: []string{"up", "--deploy", "tpu", "--imex-channels", "8"}, want: "--imex-channels 8: only with --deploy gpu"},
		"existing with drivers":        {args: []string{"up", "--provider", "existing", "--deploy", "gpu"}, want: "--deploy: not with --provider existing"},
		"kind workers on existing":     {args: []string{"up", "--provider", "existing", "--kind-workers", "1"}, want: "--kind-workers: only with --provider kind"},
		"kind negative workers":        {args: []string{"up", "--provider", "kind", "--kind-workers", "-1"}, want: "--kind-workers -1: must not be negative"},
		"env nodes on kind":            {args: []string{"up", "--provider", "kind", "--nodes", "2"}, want: "--nodes: only with --provider local"},
		"env kubelet root on existing": {args: []string{"down", "--provider", "existing", "--kubelet-root-base", "/k"}, want: "--kubelet-root-base: only with --provider local"},
		"env deploy on down":           {args: []string{"down", "--deploy", "gpu"}, want: "--deploy: only with 'drakit env up', not down"},
		"env keep on up":               {args: []string{"up", "--keep-cluster"}, want: "--keep-cluster: only with 'drakit env down', not up"},
		"env artifacts on status":      {args: []string{"status", "--artifacts", "/a"}, want: "--artifacts: only with 'drakit env down', not status"},
		"env status output":            {args: []string{"status", "-o", "yaml"}, want: `--output "yaml": want text, json, env`},
		"env logs on kind":             {args: []string{"logs", "--provider", "kind"}, want: "--provider kind: logs prints the local cluster's logs"},
		"env unknown provider status":  {args: []string{"status", "--provider", "minikube"}, want: `--provider: unknown cluster provider "minikube"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cmd := NewCommand()
			cmd.SetArgs(tc.args)
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

// TestClusterProfileFlags: --cluster-profile replaces the default node
// profile, and --deploy gpu,tpu --imex-channels deploys the GPU driver with
// its IMEX controller and the TPU driver, in that order.
func TestClusterProfileFlags(t *testing.T) {
	lf := NewLifecycleFlags("local")
	lf.local.RunDir = filepath.Join(t.TempDir(), "run")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	lf.Bind(fs)
	lf.BindLocalFlags(fs)
	if err := fs.Parse([]string{"--cluster-profile", "conformance-fabric", "--deploy", "tpu,gpu", "--imex-channels", "8", "--images-dir", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	env, err := lf.Environment(fs, cli.BindKubeFlags(fs), "")
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

// TestKindProviderFlags: --provider kind takes the kind flags (a relative
// state dir too) and builds its environment; the defaults are the offline
// node image on one node; the kind lane's --kind-node-image is a flag of
// drakit conformance.
func TestKindProviderFlags(t *testing.T) {
	lf := NewLifecycleFlags("kind")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	lf.Bind(fs)
	lf.BindLocalFlags(fs)
	if err := fs.Parse([]string{"--kind-node-image", "img:1", "--kind-workers", "1", "--kind-state-dir", "rel", "--images-dir", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if lf.kind.NodeImage != "img:1" || lf.kind.Workers != 1 || !lf.kind.Offline {
		t.Errorf("kind options %+v", lf.kind)
	}
	env, err := lf.Environment(fs, cli.BindKubeFlags(fs), "")
	if err != nil || env == nil {
		t.Fatalf("environment: %v", err)
	}
	d := NewLifecycleFlags("kind")
	if d.kind.NodeImage != DefaultKindNodeImage || d.kind.Workers != 0 || !filepath.IsAbs(d.kind.StateDir) {
		t.Errorf("kind defaults %+v", d.kind)
	}
	workflow, err := os.ReadFile("../../../../.github/workflows/kind.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(workflow), "scripts/conformance-kind.sh") {
		t.Error("the kind lane does not run scripts/conformance-kind.sh")
	}
}
