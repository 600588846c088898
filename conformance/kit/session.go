package kit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/cucumber/godog"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/conformance/report"
)

// Session runs the features one scenario at a time, for a test framework
// that picks, orders and reports the scenarios itself
// (drakit.dev/drakit/conformance/ginkgo runs each as a Ginkgo spec). Open
// does what Run does before the first scenario (validation, preflight, the
// slice informer, leftover DeviceTaintRules); RunScenario runs one scenario
// with the same steps, hooks, device leases and diagnostics as Run; Close
// writes Run's reports over the scenarios that ran. Config.Tags, Profile,
// Concurrency, Randomize and TestingT do not apply: the caller selects the
// scenarios and runs them one call at a time.
type Session struct {
	s    *Suite
	stop chan struct{}

	mu sync.Mutex
	// features are the cucumber report's features of the scenarios run,
	// one per scenario, in the order they ran.
	features []json.RawMessage
	closed   bool
}

// ErrSessionClosed is returned by a Session's methods after Close.
var ErrSessionClosed = errors.New("conformance session closed")

// Open starts a Session against the cluster and driver of cfg: it checks
// cfg and the cluster as Run does and readies the artifacts directory.
func Open(ctx context.Context, cfg Config, groups ...StepGroup) (*Session, error) {
	s, err := newSuite(cfg, groups)
	if err != nil {
		return nil, err
	}
	return s.open(ctx)
}

// open prepares the suite's run and returns it as a Session.
func (s *Suite) open(ctx context.Context) (*Session, error) {
	stop := make(chan struct{})
	if err := s.prepare(ctx, stop); err != nil {
		close(stop)
		return nil, err
	}
	klog.FromContext(ctx).Info("Opened a conformance session", "driver", s.Driver.DriverName, "server", s.server, "artifacts", s.artifacts)
	return &Session{s: s, stop: stop}, nil
}

// RunScenario runs one scenario of the feature file uri (relative to the
// features directory, as report.ScenarioResult.URI) and returns its result:
// line is the scenario's line, or an example row's for one row of a
// Scenario Outline (report.Selected gives both so). Progress goes to
// Config.Output in Config.Format. The scenario's outcome is in the result's
// Status and Message (the first failed step's finding, or the skip
// reason); an error means that it could not run: no scenario at uri:line,
// godog could not start, the session is closed.
func (x *Session) RunScenario(ctx context.Context, uri string, line int) (report.ScenarioResult, error) {
	if x.isClosed() {
		return report.ScenarioResult{}, ErrSessionClosed
	}
	s := x.s
	fsys, path, err := oneScenario(s.features, uri, line)
	if err != nil {
		return report.ScenarioResult{}, err
	}
	tmp, err := os.CreateTemp(s.artifacts, ".scenario-*.json")
	if err != nil {
		return report.ScenarioResult{}, fmt.Errorf("create the scenario's cucumber report: %w", err)
	}
	cucumber := tmp.Name()
	tmp.Close()
	defer os.Remove(cucumber)
	opts := godog.Options{
		Format:         fmt.Sprintf("%s,cucumber:%s", formatName(s.Cfg.Format), cucumber),
		Output:         s.Cfg.Output,
		NoColors:       s.Cfg.NoColors,
		FS:             fsys,
		Paths:          []string{path},
		Strict:         true,
		Concurrency:    1,
		DefaultContext: ctx,
	}
	status := godog.TestSuite{Name: "drakit", ScenarioInitializer: s.initScenario, Options: &opts}.Run()
	if status > 1 {
		return report.ScenarioResult{}, fmt.Errorf("run scenario %s:%d: godog could not start (status %d, reason on stderr)", uri, line, status)
	}
	data, err := os.ReadFile(cucumber)
	if err != nil {
		return report.ScenarioResult{}, fmt.Errorf("read the cucumber report of %s:%d: %w", uri, line, err)
	}
	features, err := withURI(data, uri)
	if err != nil {
		return report.ScenarioResult{}, fmt.Errorf("read the cucumber report of %s:%d: %w", uri, line, err)
	}
	res, err := parseFeatures(features)
	if err != nil {
		return report.ScenarioResult{}, fmt.Errorf("read the cucumber report of %s:%d: %w", uri, line, err)
	}
	if len(res.Scenarios) != 1 {
		return report.ScenarioResult{}, fmt.Errorf("run scenario %s:%d: godog ran %d scenarios, want 1", uri, line, len(res.Scenarios))
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.features = append(x.features, features...)
	return res.Scenarios[0], nil
}

// Close ends the session and writes the reports of the scenarios that ran
// (cucumber.json, junit.xml, summary.txt, conformance-report.yaml in
// Config.ArtifactsDir), printing the summary to Config.Output, as Run
// does; scenarios not run are reported as not run. The error is
// ErrNoScenarios when none ran.
func (x *Session) Close(ctx context.Context) (Result, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return Result{}, ErrSessionClosed
	}
	x.closed = true
	close(x.stop)
	features := x.features
	if features == nil {
		features = []json.RawMessage{}
	}
	data, err := json.Marshal(features)
	if err != nil {
		return Result{}, fmt.Errorf("write the cucumber report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(x.s.artifacts, CucumberFile), data, 0o644); err != nil {
		return Result{}, fmt.Errorf("write the cucumber report: %w", err)
	}
	res, err := parseFeatures(features)
	if err != nil {
		return Result{}, err
	}
	res, _, err = x.s.finish(ctx, res, "")
	return res, err
}

func (x *Session) isClosed() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.closed
}

// parseFeatures is the Result of cucumber report features.
func parseFeatures(features []json.RawMessage) (Result, error) {
	data, err := json.Marshal(features)
	if err != nil {
		return Result{}, fmt.Errorf("encode cucumber features: %w", err)
	}
	return report.ParseCucumberJSON(bytes.NewReader(data))
}

// withURI returns the features of a cucumber report with their uri set to
// uri: godog names a feature run by path:line with the line appended.
func withURI(data []byte, uri string) ([]json.RawMessage, error) {
	var features []map[string]json.RawMessage
	if err := json.Unmarshal(data, &features); err != nil {
		return nil, fmt.Errorf("decode cucumber report: %w", err)
	}
	quoted, err := json.Marshal(uri)
	if err != nil {
		return nil, fmt.Errorf("encode feature uri %q: %w", uri, err)
	}
	out := make([]json.RawMessage, 0, len(features))
	for _, f := range features {
		f["uri"] = quoted
		raw, err := json.Marshal(f)
		if err != nil {
			return nil, fmt.Errorf("encode cucumber feature %s: %w", uri, err)
		}
		out = append(out, raw)
	}
	return out, nil
}

// scenarioPath is the godog path of a scenario: its feature file and line.
func scenarioPath(uri string, line int64) string {
	return uri + ":" + strconv.FormatInt(line, 10)
}
