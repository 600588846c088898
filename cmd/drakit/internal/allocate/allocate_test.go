package allocate

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
	"drakit.dev/drakit/oracle/allocator/bench"
)

func runDrakit(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := &cobra.Command{Use: "drakit", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(NewCommand())
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestAllocateGenerateAndRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "frag-numa.yaml")
	if out, err := runDrakit(t, "allocate", "generate", "--family", "frag-numa", "--n", "2", "--output", file); err != nil {
		t.Fatalf("generate: %v\n%s", err, out)
	}
	tests := []struct {
		name      string
		args      []string
		allocated []bool // per claim, per run
		runs      int
	}{
		{name: "first fit fragments", args: []string{"--one-by-one"}, allocated: []bool{true, false}, runs: 1},
		{name: "packing places both pods", args: []string{"--one-by-one", "--mode", "packing", "--compare-upstream"}, allocated: []bool{true, true}, runs: 2},
		{name: "both claims in one call", args: nil, allocated: []bool{true, true}, runs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runDrakit(t, append([]string{"allocate", "-f", file, "-o", "yaml"}, tc.args...)...)
			if err != nil {
				t.Fatalf("allocate: %v\n%s", err, out)
			}
			var rep bench.Report
			if err := yaml.UnmarshalStrict([]byte(out), &rep); err != nil {
				t.Fatalf("parse report: %v\n%s", err, out)
			}
			if len(rep.Runs) != tc.runs {
				t.Fatalf("%d runs, want %d", len(rep.Runs), tc.runs)
			}
			run := rep.Runs[0]
			for i, want := range tc.allocated {
				if got := run.Claims[i].Allocation != nil; got != want {
					t.Errorf("%s: claim %s allocated %v, want %v (%s)", run.Allocator, run.Claims[i].Claim, got, want, run.Claims[i].Why)
				}
			}
		})
	}
	out, err := runDrakit(t, "allocate", "-f", file, "--one-by-one")
	if err != nil || !strings.Contains(out, "claim default/pod-1-gpu-nic: no allocation on node node-0") {
		t.Errorf("text output does not say why pod-1 does not fit (%v):\n%s", err, out)
	}
}

func TestAllocateErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"allocate"}, "file: required"},
		{[]string{"allocate", "-f", "x.yaml", "--mode", "best"}, `mode: parse mode "best"`},
		{[]string{"allocate", "-f", "x.yaml", "-o", "json"}, `output: must be text or yaml, got "json"`},
		{[]string{"allocate", "-f", "../../../../oracle/allocator/scenario/testdata/invalid-unknown-field.yaml"},
			"line 53: allocatedClaims[0].spec.devices.requests[0].exactly.cont: Forbidden: unknown field"},
		{[]string{"allocate", "generate", "--family", "H3", "--n", "500", "--k", "8"}, "n must be in [2, 128]"},
	}
	for _, tc := range tests {
		out, err := runDrakit(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("drakit %s: error %v, want one containing %q\n%s", strings.Join(tc.args, " "), err, tc.want, out)
		}
	}
}

// TestAllocateExplainsTheCause: on a scenario where no claim is allocated,
// the explanation names the constraint that cannot be met and the request
// that took the devices, and never says "in use".
func TestAllocateExplainsTheCause(t *testing.T) {
	out, err := runDrakit(t, "allocate", "-f", "../../../../oracle/allocator/scenario/testdata/valid-constraint-cannot-be-met.yaml")
	if err != nil {
		t.Fatalf("allocate: %v\n%s", err, out)
	}
	for _, want := range []string{
		"claim default/c: no allocation on node node-1",
		"constraint #0 (matchAttribute gpu.example.com/numa) cannot be met: request(s) r, s need 4 devices with one value of it, no value has more than 3",
		"taken by request r of this claim",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "in use") {
		t.Errorf("output says \"in use\" where nothing is allocated:\n%s", out)
	}
}

func TestAllocateInstancesListsFamilies(t *testing.T) {
	out, err := runDrakit(t, "allocate", "instances")
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range []string{"H1:", "H3b:", "H5c:", "frag-mig:", "many-nodes:", "sizes n/k: 16/4 24/6 32/8"} {
		if !strings.Contains(out, fam) {
			t.Errorf("instances output lacks %q:\n%s", fam, out)
		}
	}
}

func TestAllocateFlagsMapOneToOne(t *testing.T) {
	var gcfg generateConfig
	g := &cobra.Command{}
	bindGenerateFlags(g, &gcfg)
	clitest.CheckFlagsMapOneToOne(t, g.Flags(), &gcfg)

	cfg := bench.Config{}
	c := &cobra.Command{}
	bindAllocateFlags(c, &cfg)
	clitest.CheckFlagsMapOneToOne(t, c.Flags(), &cfg)
}
