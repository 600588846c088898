package conformance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/report"
)

func TestConformanceFlagsMapOntoConfig(t *testing.T) {
	cfg := conformance.DefaultConfig()
	fs := pflag.NewFlagSet("conformance", pflag.ContinueOnError)
	bindConformanceFlags(fs, &cfg)
	err := fs.Parse([]string{
		"--kubeconfig", "/k", "--probe-image", "probe:1", "--probe-binary", "/probe", "--image-pull-policy", "IfNotPresent",
		"--apiserver-host", "127.0.0.2", "--apiserver-port", "16443", "--node-cdi-dir", "/cdi",
		"--node-emulator-roots", "127.0.0.1=/r1,127.0.0.2=/r2",
		"--tags", "@kep-4381", "--profile", "core", "--fail-on-skip", "--artifacts", "/a",
		"--api-timeout", "1s", "--publish-timeout", "2s", "--pod-start-timeout", "3s", "--pod-delete-timeout", "4s",
		"--cleanup-timeout", "5s", "--scheduler-binding-timeout", "6s", "--fault-command-timeout", "7s", "--concurrency", "3", "--random", "-1", "--format", "progress", "--no-colors",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := conformance.Config{
		Kubeconfig: "/k", ProbeImage: "probe:1", ProbeBinary: "/probe", ImagePullPolicy: "IfNotPresent",
		APIServerHost: "127.0.0.2", APIServerPort: 16443, NodeCDIDir: "/cdi",
		NodeEmulatorRoots: map[string]string{"127.0.0.1": "/r1", "127.0.0.2": "/r2"},
		Tags:              "@kep-4381", Profile: "core", FailOnSkip: true, ArtifactsDir: "/a",
		Timeouts:    conformance.Timeouts{API: time.Second, Publish: 2 * time.Second, PodStart: 3 * time.Second, PodDelete: 4 * time.Second, Cleanup: 5 * time.Second, SchedulerBinding: 6 * time.Second, FaultCommand: 7 * time.Second},
		Concurrency: 3, Randomize: -1, Format: "progress", NoColors: true,
	}
	if diff := cmp.Diff(want, cfg, cmpopts.IgnoreFields(conformance.Config{}, "Output", "TestingT")); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

// TestDriverFlagsWriteTheDeclaration: the driver flags, --hardware as a
// bare switch and --set among them, describe the driver without a file.
func TestDriverFlagsWriteTheDeclaration(t *testing.T) {
	fs := pflag.NewFlagSet("conformance", pflag.ContinueOnError)
	var file string
	o := bindDriverFlags(fs, &file)
	if err := fs.Parse([]string{"--driver", "gpu.example.com", "--device-class", "big", "--uuid-attribute", "nvidia.com/uuid",
		"--capabilities", "partitionableDevices", "--partition-class", "mig.example.com", "--profile-attribute", "example.com/profile",
		"--parent-uuid-attribute", "parent", "--memory-capacity", "example.com/mem", "--driver-namespace", "gpu",
		"--driver-pod-selector", "app=d", "--hardware", "--set", "driver.version=v2"}); err != nil {
		t.Fatal(err)
	}
	d, err := o.Declaration(file)
	if err != nil {
		t.Fatal(err)
	}
	s := d.KitSettings()
	if s.DriverName != "gpu.example.com" || s.DeviceClassName != "big" || s.UUIDAttribute != "nvidia.com/uuid" || s.PartitionClassName != "mig.example.com" ||
		s.ProfileAttribute != "example.com/profile" || s.ParentUUIDAttribute != "parent" || s.MemoryCapacity != "example.com/mem" ||
		s.DriverNamespace != "gpu" || s.DriverPodSelector != "app=d" || !s.Hardware || s.DriverVersion != "v2" {
		t.Errorf("settings %+v do not say what the flags did", s)
	}
}

// TestEveryDriverFlagIsAFlag: each field the declaration binds to a flag
// (declaration.Flags) and --set are flags of drakit conformance, with the
// field in their help.
func TestEveryDriverFlagIsAFlag(t *testing.T) {
	cmd := NewCommand()
	for _, f := range declaration.Flags() {
		fl := cmd.Flags().Lookup(f.Name)
		if fl == nil {
			t.Errorf("flag --%s (declaration %s) is missing", f.Name, f.Path)
			continue
		}
		if !strings.Contains(fl.Usage, f.Path) {
			t.Errorf("--%s's help %q does not name %s", f.Name, fl.Usage, f.Path)
		}
	}
	if cmd.Flags().Lookup(declaration.SetFlag) == nil {
		t.Errorf("flag --%s is missing", declaration.SetFlag)
	}
}

func TestConformanceCommandFailsFast(t *testing.T) {
	const envOnly = "../../../../docs/examples/env-only-driver.yaml"
	t.Setenv("DRAKIT_KUBECONFIG", "")
	t.Setenv("DRAKIT_CDI_DIR", "")
	tests := map[string]struct {
		args []string
		want string
		code int
	}{
		"missing kubeconfig file": {args: []string{"--kubeconfig", "/nonexistent/kubeconfig", "--driver-config", "../../../../docs/examples/env-only-driver.yaml"},
			want: "load kubeconfig: stat /nonexistent/kubeconfig", code: report.ExitCouldNotCertify},
		"no driver":         {args: []string{"--kubeconfig", "/k"}, want: "--driver: driver.name: Required value", code: report.ExitUsage},
		"bad driver flag":   {args: []string{"--kubeconfig", "/k", "--set", "deviceKinds[whole].colour=red"}, want: `--set: invalid driver declaration: set deviceKinds[whole].colour: deviceKinds[0] has no field "colour"`, code: report.ExitUsage},
		"invalid flags":     {args: []string{"--kubeconfig", "/k", "--driver-config", envOnly, "--concurrency", "0", "--image-pull-policy", "Often"}, want: "invalid conformance config", code: report.ExitUsage},
		"unknown profile":   {args: []string{"--kubeconfig", "/k", "--driver-config", envOnly, "--profile", "gold"}, want: `Profile: unknown profile "gold" (known: ` + strings.Join(report.ProfileNames(), ", ") + `)`, code: report.ExitUsage},
		"no kubeconfig":     {args: []string{"--driver-config", envOnly}, want: "Kubeconfig: required", code: report.ExitUsage},
		"no declaration":    {args: []string{"--kubeconfig", "/k", "--driver-config", "/nonexistent/driver.yaml"}, want: "/nonexistent/driver.yaml", code: report.ExitUsage},
		"unknown flag":      {args: []string{"--kubeconfig", "/k", "--no-such-flag"}, want: "unknown flag: --no-such-flag", code: report.ExitUsage},
		"an argument":       {args: []string{"--kubeconfig", "/k", "extra"}, want: `unknown command "extra"`, code: report.ExitUsage},
		"bad logging flags": {args: []string{"--kubeconfig", "/k", "--logging-format", "xml"}, want: "apply logging flags", code: report.ExitUsage},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := clitest.Run(t, NewCommand(), append([]string{"conformance"}, append(tc.args, "--artifacts", t.TempDir())...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if code, _ := cli.ExitCode(err); code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
		})
	}
}

// TestSummarizeExitCodes re-judges the report package's fixture runs:
// summarize's last line and exit code are the verdict's of each run, as
// drakit conformance's would be, and of the runs together.
func TestSummarizeExitCodes(t *testing.T) {
	fixture := func(t *testing.T, name string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "conformance", "report", "testdata", "cucumber-"+name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, conformance.CucumberFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	tests := map[string]struct {
		runs       []string
		failOnSkip bool
		want       report.Outcome
	}{
		"success":                   {runs: []string{"success"}, want: report.Conformant},
		"partial":                   {runs: []string{"partial"}, want: report.Conformant},
		"partial with fail-on-skip": {runs: []string{"partial"}, failOnSkip: true, want: report.CouldNotCertify},
		"failure":                   {runs: []string{"failure"}, want: report.NotConformant},
		"success and partial":       {runs: []string{"success", "partial"}, failOnSkip: true, want: report.CouldNotCertify},
		"success and failure":       {runs: []string{"success", "failure"}, want: report.NotConformant},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			args := []string{"conformance", "summarize"}
			if tc.failOnSkip {
				args = append(args, "--fail-on-skip")
			}
			var runs []report.Run
			for _, r := range tc.runs {
				dir := fixture(t, r)
				args = append(args, dir)
				run, err := report.ReadRun(dir, conformance.CucumberFile)
				if err != nil {
					t.Fatal(err)
				}
				run.Result.SkipsFail = tc.failOnSkip
				runs = append(runs, run)
			}
			out, err := clitest.Run(t, NewCommand(), args...)
			code, msg := cli.ExitCode(err)
			if want := tc.want.ExitCode(); code != want {
				t.Errorf("exit code %d (%v), want %d", code, err, want)
			}
			judged := report.JudgeRuns(runs)
			if judged.Outcome != tc.want {
				t.Errorf("verdict %s, want %s", judged.Outcome, tc.want)
			}
			if len(runs) == 1 {
				if v := report.Judge(runs[0].Result); v.Line() != judged.Line() {
					t.Errorf("summarize says %q of one run, the run's verdict is %q", judged.Line(), v.Line())
				}
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if last := lines[len(lines)-1]; last != judged.Line() {
				t.Errorf("summary ends with %q, want %q", last, judged.Line())
			}
			if err != nil && msg != judged.Line() {
				t.Errorf("error message %q, want the summary's last line %q", msg, judged.Line())
			}
		})
	}
	if _, err := clitest.Run(t, NewCommand(), "conformance", "summarize", filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("summarize of a directory without a cucumber.json succeeded")
	} else if code, _ := cli.ExitCode(err); code != report.ExitUsage {
		t.Errorf("summarize of a directory without a cucumber.json: exit code %d, want %d", code, report.ExitUsage)
	}
}

// TestVerdictError: drakit conformance exits with the verdict's code and
// line; a run that could not take place could not certify.
func TestVerdictError(t *testing.T) {
	pass := report.ScenarioResult{URI: "kep-4381-x/a.feature", Line: 1, Tags: []string{"@kep-4381", "@core"}, Status: report.StatusPassed}
	fail := report.ScenarioResult{URI: "kep-4381-x/a.feature", Line: 2, Tags: []string{"@kep-4381", "@core"}, Status: report.StatusFailed, Message: "wrong device"}
	skip := report.ScenarioResult{URI: "kep-4381-x/a.feature", Line: 3, Tags: []string{"@kep-4381", "@core"}, Status: report.StatusSkipped, Message: "no node access"}
	judge := func(s ...report.ScenarioResult) report.Verdict { return report.Judge(report.Result{Scenarios: s}) }
	tests := map[string]struct {
		v    report.Verdict
		err  error
		code int
		msg  string
	}{
		"conformant":                      {v: judge(pass), code: 0},
		"not conformant":                  {v: judge(pass, fail), code: 1, msg: "verdict: Not conformant (1 finding)"},
		"not conformant, tear-down error": {v: judge(pass, fail), err: errors.New("tear down"), code: 1, msg: "verdict: Not conformant (1 finding)"},
		"could not certify":               {v: judge(pass, skip), code: 3, msg: "verdict: Could not certify (1 reason)"},
		"no scenario ran":                 {v: judge(), err: fmt.Errorf("%w %q", conformance.ErrNoScenarios, "@x"), code: 3, msg: "verdict: Could not certify (1 reason)"},
		"cluster unreachable":             {err: errors.New("reach API server"), code: 3, msg: "drakit: reach API server"},
		"conformant, tear-down error":     {v: judge(pass), err: errors.New("tear down"), code: 3, msg: "drakit: tear down"},
	}
	for name, tc := range tests {
		err := verdictError(t.Context(), tc.v, tc.err)
		if tc.code == 0 {
			if err != nil {
				t.Errorf("%s: %v, want none", name, err)
			}
			continue
		}
		if code, msg := cli.ExitCode(err); code != tc.code || msg != tc.msg {
			t.Errorf("%s: exit %d %q, want %d %q", name, code, msg, tc.code, tc.msg)
		}
	}
}

// TestExitCodesDocumented: drakit conformance --help and the README name
// every exit code with its verdict.
func TestExitCodesDocumented(t *testing.T) {
	long := NewCommand().Long
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for code, verdict := range map[int]string{
		report.ExitConformant: report.Conformant.String(), report.ExitNotConformant: report.NotConformant.String(),
		report.ExitUsage: "usage error", report.ExitCouldNotCertify: report.CouldNotCertify.String(),
	} {
		if want := fmt.Sprintf("%d  %s", code, verdict); !strings.Contains(long, want) {
			t.Errorf("drakit conformance --help lacks %q", want)
		}
		if want := fmt.Sprintf("| %d | %s", code, verdict); !strings.Contains(string(readme), want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
}
