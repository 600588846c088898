package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/cucumber/godog"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// fixtureInput describes the fixture runs.
func fixtureInput() Input {
	return Input{
		KitVersion:        "v0.1.0",
		Date:              time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC),
		KubernetesVersion: "v1.37.2",
		Driver:            "gpu.drakit.dev",
		DeviceKinds:       []DeviceKind{{Name: "devices", DeviceClass: "gpu.drakit.dev"}, {Name: "partitions", DeviceClass: "mig.gpu.drakit.dev"}},
	}
}

// readReport parses a report into generic YAML values.
func readReport(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the report is not YAML: %v\n%s", err, data)
	}
	return doc
}

// profileResults maps each reported profile to its result.
func profileResults(t *testing.T, doc map[string]any) map[string]string {
	t.Helper()
	got := map[string]string{}
	list, _ := doc["profiles"].([]any)
	for _, p := range list {
		m := p.(map[string]any)
		got[m["name"].(string)] = m["result"].(string)
	}
	return got
}

// TestWriteConformanceReport renders the reports of three fixture runs
// (cucumber JSON in testdata) and checks them against golden files and the
// profile results: unclaimed Extended skips and an Extended skip the kit
// could not avoid are conformant; a failure is not, a skipped Core scenario
// and an undefined step keep the kit from certifying.
func TestWriteConformanceReport(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		gates []string
		want  map[string]string
	}{
		"success": {gates: []string{"DRAPartitionableDevicesType", "DRADeviceCompatibilityGroups"}, want: map[string]string{"core": "conformant", "partitionable": "conformant"}},
		"partial": {want: map[string]string{"core": "conformant"}},
		"failure": {want: map[string]string{"core": "not-conformant", "partitionable": "could-not-certify", "alpha": "could-not-certify"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(filepath.Join("testdata", "cucumber-"+name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := ParseCucumberJSON(f)
			if err != nil {
				t.Fatalf("ParseCucumberJSON: %v", err)
			}
			res.Seed = 42
			in := fixtureInput()
			in.FeatureGates = tc.gates
			var b bytes.Buffer
			if err := WriteConformanceReport(&b, in, res, Judge(res)); err != nil {
				t.Fatalf("WriteConformanceReport: %v", err)
			}
			checkGolden(t, "conformance-report-"+name+".golden.yaml", b.Bytes())
			doc := readReport(t, b.Bytes())
			if diff := cmp.Diff(tc.want, profileResults(t, doc)); diff != "" {
				t.Errorf("profile results (-want +got):\n%s", diff)
			}
			if doc["apiVersion"] != APIVersion || doc["kind"] != Kind {
				t.Errorf("apiVersion, kind = %v, %v", doc["apiVersion"], doc["kind"])
			}
		})
	}
}

// TestWriteConformanceReportUnknowns: what the runner leaves empty is
// "unknown", never guessed; the kit's version comes from the build info.
func TestWriteConformanceReportUnknowns(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	res := Result{Scenarios: []ScenarioResult{{URI: "kep-4381-x/a.feature", Line: 3, Name: "a", Tags: []string{"@kep-4381", "@core"}, Status: StatusPassed}}}
	start := time.Now().UTC().Truncate(time.Second)
	if err := WriteConformanceReport(&b, Input{}, res, Judge(res)); err != nil {
		t.Fatal(err)
	}
	doc := readReport(t, b.Bytes())
	k8s := doc["kubernetes"].(map[string]any)
	driver := doc["driver"].(map[string]any)
	for field, got := range map[string]any{
		"kubernetes.version": k8s["version"], "kubernetes.enabledFeatureGates": k8s["enabledFeatureGates"],
		"driver.name": driver["name"], "driver.version": driver["version"],
	} {
		if got != unknown {
			t.Errorf("%s = %v, want %q", field, got, unknown)
		}
	}
	if v, _ := doc["kitVersion"].(string); v == "" {
		t.Errorf("kitVersion is empty, want the build info's version or %q", unknown)
	}
	date, err := time.Parse(time.RFC3339, doc["date"].(string))
	if err != nil || date.Before(start) {
		t.Errorf("date = %v (err %v), want the time of writing", doc["date"], err)
	}
	run := doc["run"].(map[string]any)
	if run["profile"] != "all" || run["hardware"] != "emulated" {
		t.Errorf("run = %v, want profile all on emulated hardware", run)
	}
}

const profileFeature = `Feature: profile selection

  @kep-4381 @core
  Scenario: core passes
    Then a passing step

  @kep-4381 @extended @emulator
  Scenario: needs the emulator
    Then a passing step

  @kep-4381 @extended
  Scenario Outline: row <n>
    Then a passing step

    Examples:
      | n |
      | 1 |
      | 2 |

  @kep-4815 @core
  Scenario: partitions
    Then a passing step
`

// TestScenariosNotRun runs a feature through godog with a profile's filter
// and checks that the report counts the profile's scenarios the filter
// left out as skipped, with the filter as the reason, and leaves out the
// profiles of which nothing ran (partitionable here).
func TestScenariosNotRun(t *testing.T) {
	t.Parallel()
	features := fstest.MapFS{"kep-4381-x/profile.feature": {Data: []byte(profileFeature)}}
	tags, err := Filter("core", "~@emulator")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cucumber.json")
	opts := godog.Options{Format: "cucumber:" + path, Output: &bytes.Buffer{}, Strict: true, NoColors: true, FS: features, Paths: []string{"."}, Tags: tags}
	godog.TestSuite{Name: "profiles", Options: &opts, ScenarioInitializer: func(sc *godog.ScenarioContext) {
		sc.Step(`^a passing step$`, func(ctx context.Context) (context.Context, error) { return ctx, nil })
	}}.Run()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ParseCucumberJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if res.Total() != 3 || res.Passed != 3 {
		t.Fatalf("godog ran %+v, want the 3 scenarios of core without @emulator", res.Counts)
	}
	in := fixtureInput()
	in.Profile, in.Tags, in.Features = "core", tags, features
	var b bytes.Buffer
	if err := WriteConformanceReport(&b, in, res, Judge(res)); err != nil {
		t.Fatal(err)
	}
	doc := readReport(t, b.Bytes())
	if diff := cmp.Diff(map[string]string{"core": "conformant"}, profileResults(t, doc)); diff != "" {
		t.Errorf("profile results (-want +got):\n%s", diff)
	}
	core := doc["profiles"].([]any)[0].(map[string]any)
	wantCounts := map[string]any{
		"core":     map[string]any{"passed": 1.0, "failed": 0.0, "skipped": 0.0, "notEligible": 0.0},
		"extended": map[string]any{"passed": 2.0, "failed": 0.0, "skipped": 1.0, "notEligible": 0.0},
	}
	for level, want := range wantCounts {
		if diff := cmp.Diff(want, core[level]); diff != "" {
			t.Errorf("%s counts (-want +got):\n%s", level, diff)
		}
	}
	skipped := core["keps"].([]any)[0].(map[string]any)["skipped"].([]any)
	if len(skipped) != 1 {
		t.Fatalf("skipped = %v, want the @emulator scenario", skipped)
	}
	want := map[string]any{
		"name": "needs the emulator", "location": "kep-4381-x/profile.feature:8", "conformance": "extended",
		"reason": `not run: the run's tag filter "@kep-4381 && ~@nvlink-fabric && ~@pci-topology && ~@emulator" does not select it`,
	}
	if diff := cmp.Diff(want, skipped[0]); diff != "" {
		t.Errorf("skipped scenario (-want +got):\n%s", diff)
	}
}

func TestWriteConformanceReportBadFeatures(t *testing.T) {
	t.Parallel()
	in := Input{Features: fstest.MapFS{"kep-1-x/bad.feature": {Data: []byte("@tag\n")}}}
	err := WriteConformanceReport(&bytes.Buffer{}, in, Result{}, Judge(Result{}))
	if err == nil || !strings.Contains(err.Error(), "parse feature kep-1-x/bad.feature") {
		t.Errorf("got %v, want a parse error naming the file", err)
	}
}

func TestPrintable(t *testing.T) {
	if got := printable("\x1b[31mred\x1b[0m\x00\tend\n"); got != `\e[31mred\e[0m`+"\tend\n" {
		t.Errorf("printable = %q", got)
	}
}
