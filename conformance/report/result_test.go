package report

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cucumber/godog"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const statusFeature = `Feature: statuses
  Every outcome a scenario can have.

  Background:
    Given a passing step

  @kep-1 @slow
  Scenario: passes
    Then a passing step

  @kep-1
  Scenario: fails
    When a failing step
    Then a passing step

  @kep-2
  Scenario: is skipped
    Given the driver claims partitionableDevices
    Then a capability the cluster lacks

  @kep-2
  Scenario: is pending
    Given a pending step

  @kep-2
  Scenario: is ambiguous
    Given an ambiguous step

  @kep-3
  Scenario: is undefined
    Given a step nobody defined

  @kep-5
  Scenario: fails through the kit
    When the kit fails
    Then a failing step

  @kep-3
  Scenario Outline: outline <n>
    Then step <result>

    @kep-4
    Examples:
      | n | result  |
      | 1 | passes  |
      | 2 | fails   |
`

// runStatusFeature runs statusFeature through godog with the cucumber
// formatter and returns the report.
func runStatusFeature(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cucumber.json")
	opts := godog.Options{
		Format:   "cucumber:" + path,
		Output:   &bytes.Buffer{},
		Strict:   true,
		NoColors: true,
		FS:       fstest.MapFS{"kep-1-status/status.feature": {Data: []byte(statusFeature)}},
		Paths:    []string{"."},
	}
	godog.TestSuite{Name: "status", Options: &opts, ScenarioInitializer: func(sc *godog.ScenarioContext) {
		sc.Step(`^a passing step$`, func() error { return nil })
		sc.Step(`^step passes$`, func(ctx context.Context) (context.Context, error) {
			return godog.Attach(ctx, godog.Attachment{FileName: WarningAttachment, MediaType: "text/plain", Body: []byte("a convention unkept")}), nil
		})
		sc.Step(`^a failing step$`, func() error { return errors.New("claim gpu-1: expected 2 devices, got 1") })
		sc.Step(`^step fails$`, func() error { return errors.New("pod p: no device node 195:3") })
		sc.Step(`^a capability the cluster lacks$`, func(ctx context.Context) (context.Context, error) {
			ctx = godog.Attach(ctx, godog.Attachment{FileName: SkipReasonAttachment, MediaType: "text/plain", Body: []byte("the cluster lacks it")})
			return ctx, godog.ErrSkip
		})
		sc.Step(`^the driver claims (\w+)$`, func(ctx context.Context, c string) (context.Context, error) {
			return godog.Attach(ctx, godog.Attachment{FileName: ClaimedCapabilityAttachment, MediaType: "text/plain", Body: []byte(c)}), nil
		})
		sc.Step(`^the kit fails$`, func(ctx context.Context) (context.Context, error) {
			return godog.Attach(ctx, godog.Attachment{FileName: KitFailureAttachment, MediaType: "text/plain", Body: []byte("x")}), errors.New("fault command exited with code 2")
		})
		sc.Step(`^a pending step$`, func() error { return godog.ErrPending })
		sc.Step(`^an ambiguous step$`, func() error { return nil })
		sc.Step(`^an ambiguous (step)$`, func(string) error { return nil })
		sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
			if err != nil && !errors.Is(err, godog.ErrSkip) && !errors.Is(err, godog.ErrPending) && !errors.Is(err, godog.ErrUndefined) {
				ctx = godog.Attach(ctx, godog.Attachment{FileName: "diagnostics/x.txt", MediaType: "text/plain", Body: []byte("diag")})
			}
			return ctx, nil
		})
	}}.Run()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read cucumber report: %v", err)
	}
	return data
}

// TestParseCucumberJSON parses what godog v0.16 really writes, for every
// outcome, and checks in particular that a skipped scenario is never
// counted as passed.
func TestParseCucumberJSON(t *testing.T) {
	t.Parallel()
	res, err := ParseCucumberJSON(bytes.NewReader(runStatusFeature(t)))
	if err != nil {
		t.Fatalf("ParseCucumberJSON: %v", err)
	}
	const uri = "kep-1-status/status.feature"
	want := []ScenarioResult{
		{Name: "passes", Line: 8, Tags: []string{"@kep-1", "@slow"}, Status: StatusPassed},
		{Name: "fails", Line: 12, Tags: []string{"@kep-1"}, Status: StatusFailed, Message: "claim gpu-1: expected 2 devices, got 1", Diagnostics: "diagnostics/x.txt"},
		{Name: "is skipped", Line: 17, Tags: []string{"@kep-2"}, Status: StatusSkipped, Message: "the cluster lacks it", Claimed: []string{"partitionableDevices"}},
		{Name: "is pending", Line: 22, Tags: []string{"@kep-2"}, Status: StatusPending},
		{Name: "is ambiguous", Line: 26, Tags: []string{"@kep-2"}, Status: StatusFailed, Diagnostics: "diagnostics/x.txt"},
		{Name: "is undefined", Line: 30, Tags: []string{"@kep-3"}, Status: StatusUndefined},
		// Its first failure is the kit's.
		{Name: "fails through the kit", Line: 34, Tags: []string{"@kep-5"}, Status: StatusFailed, Message: "fault command exited with code 2", Diagnostics: "diagnostics/x.txt", KitFailure: true},
		{Name: "outline 1", Line: 45, Tags: []string{"@kep-3", "@kep-4"}, Status: StatusPassed, Warnings: []string{"a convention unkept"}},
		{Name: "outline 2", Line: 46, Tags: []string{"@kep-3", "@kep-4"}, Status: StatusFailed, Message: "pod p: no device node 195:3", Diagnostics: "diagnostics/x.txt"},
	}
	for i := range want {
		want[i].Feature, want[i].URI = "statuses", uri
	}
	opts := []cmp.Option{
		cmpopts.IgnoreFields(ScenarioResult{}, "Duration"),
		cmpopts.SortSlices(func(a, b ScenarioResult) bool { return a.Line < b.Line }),
		// godog words the ambiguity itself; only check that it is there.
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Message" }, cmp.Comparer(func(a, b string) bool {
			if strings.HasPrefix(a, "ambiguous step definition") || strings.HasPrefix(b, "ambiguous step definition") {
				return strings.HasPrefix(a, "ambiguous") && strings.HasPrefix(b, "ambiguous")
			}
			return a == b
		})),
	}
	for i := range want {
		if want[i].Name == "is ambiguous" {
			want[i].Message = "ambiguous step definition"
		}
	}
	if diff := cmp.Diff(want, res.Scenarios, opts...); diff != "" {
		t.Errorf("scenarios (-want +got):\n%s", diff)
	}
	wantCounts := Counts{Passed: 2, Failed: 4, Skipped: 1, Undefined: 1, Pending: 1}
	if diff := cmp.Diff(wantCounts, res.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	wantByTag := map[string]Counts{
		"@kep-1": {Passed: 1, Failed: 1},
		"@kep-2": {Failed: 1, Skipped: 1, Pending: 1},
		"@kep-3": {Passed: 1, Failed: 1, Undefined: 1},
		"@kep-4": {Passed: 1, Failed: 1},
		"@kep-5": {Failed: 1},
	}
	if diff := cmp.Diff(wantByTag, res.ByTag); diff != "" {
		t.Errorf("by tag (-want +got):\n%s", diff)
	}
}

func TestParseCucumberJSONErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in, want string
	}{
		"not JSON":       {in: `{"uri":`, want: "decode cucumber report"},
		"object":         {in: `{"uri":"x"}`, want: "decode cucumber report"},
		"bad attachment": {in: `[{"uri":"a.feature","elements":[{"name":"s","line":3,"type":"scenario","steps":[{"result":{"status":"passed"},"embeddings":[{"name":"skip-reason","data":"%%%"}]}]}]}]`, want: "decode attachment skip-reason of a.feature:3"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseCucumberJSON(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// cdiSkipReason is the conformance kit's reason for skipping CDI checks.
const cdiSkipReason = "the kit cannot see the node's file system: no node CDI directory configured (set --node-cdi-dir to the directory in containerd's cdi_spec_dirs)"

// goldenResult is a fixed result for the report golden files.
func goldenResult() Result {
	return Result{
		Counts: Counts{Passed: 2, Failed: 1, Skipped: 1, Undefined: 1},
		ByTag: map[string]Counts{
			"@kep-4381": {Passed: 2, Failed: 1, Skipped: 1},
			NoKEPTag:    {Undefined: 1},
		},
		Seed: 42,
		Scenarios: []ScenarioResult{
			{Feature: "allocation", URI: "kep-4381-structured-parameters/allocation.feature", Line: 12, Name: "A pod sees exactly its GPU", Tags: []string{"@kep-4381"}, Status: StatusPassed, Duration: 3_200_000_000},
			{Feature: "allocation", URI: "kep-4381-structured-parameters/allocation.feature", Line: 30, Name: "Two GPUs of one NUMA node", Tags: []string{"@kep-4381"}, Status: StatusFailed,
				Message: "2 findings:\n- claim pair: expected 2 devices, got 1\n- pod numa: no device node 195:3", Diagnostics: "diagnostics/two-gpus-of-one-numa-node-9.txt", Duration: 61_000_000_000},
			{Feature: "validation", URI: "kep-4381-structured-parameters/validation.feature", Line: 14, Name: "outline", Tags: []string{"@kep-4381"}, Status: StatusPassed, Duration: 10_000_000},
			{Feature: "deallocation", URI: "kep-4381-structured-parameters/deallocation.feature", Line: 40, Name: "CDI spec is removed", Tags: []string{"@kep-4381"}, Status: StatusSkipped, Message: cdiSkipReason},
			{Feature: "misc", URI: "kep-0-misc/misc.feature", Line: 3, Name: "undefined <stuff> & more", Status: StatusUndefined},
		},
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got), run with -update if intended:\n%s", path, diff)
	}
}

func TestWriteSummary(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	h := SummaryHeader{Driver: "gpu.drakit.dev", DeviceKinds: []DeviceKind{{Name: "gpu", DeviceClass: "gpu.drakit.dev"}}, Tags: "@kep-4381", Server: "https://127.0.0.1:6443 (Kubernetes v1.37.2)"}
	res := goldenResult()
	if err := WriteSummary(&b, h, res, Judge(res)); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "summary.golden", b.Bytes())
}

func TestWriteJUnit(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteJUnit(&b, goldenResult()); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "junit.golden.xml", b.Bytes())
}
