package ginkgo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	gk "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

// Labels every spec of the kit carries, besides its tags.
const (
	// SuiteLabel is on the kit's container: --ginkgo.label-filter='!drakit'
	// leaves the kit out of a driver's suite.
	SuiteLabel = "drakit"
	// ProfileLabelPrefix starts the label naming a scenario's conformance
	// profile, "profile:partitionable": a Ginkgo label set, also matched
	// whole by --ginkgo.label-filter=profile:partitionable.
	ProfileLabelPrefix = "profile:"
	// featuresDir is where the feature files are in drakit's repository,
	// for the specs' code locations.
	featuresDir = "features"
)

// Register adds drakit's conformance scenarios to the Ginkgo suite being
// built; call it at the top level of a test package (var _ =
// ginkgo.Register(...)), before RunSpecs. config is called once, in the
// container's BeforeAll, when the first selected scenario is about to
// run: flags are parsed by then. It returns true, for the var _ = form.
func Register(config func() (conformance.Config, error)) bool {
	return register(features.FS, func(ctx context.Context) (session, settings, error) {
		cfg, err := config()
		if err != nil {
			return nil, settings{}, fmt.Errorf("configure drakit conformance: %w", err)
		}
		return openSession(ctx, cfg)
	})
}

// session is what the specs need of a conformance.Session.
type session interface {
	RunScenario(ctx context.Context, uri string, line int) (report.ScenarioResult, error)
	Close(ctx context.Context) (conformance.Result, error)
}

// settings are what the specs need of the session's Config.
type settings struct {
	// artifacts is the absolute artifacts directory.
	artifacts  string
	failOnSkip bool
}

// opener starts the session of the kit's container.
type opener func(ctx context.Context) (session, settings, error)

// register adds the container of the scenarios of fsys, whose session
// open starts.
func register(fsys fs.FS, open opener) bool {
	scenarios, err := report.Selected(fsys, "")
	k := &kit{open: open}
	gk.Describe("drakit conformance", gk.Ordered, gk.ContinueOnFailure, gk.Serial, gk.Label(SuiteLabel), func() {
		if err != nil {
			gk.It("reads the features", func() { gk.Fail(fmt.Sprintf("drakit conformance: %v", err)) })
			return
		}
		gk.BeforeAll(k.beforeAll)
		gk.AfterAll(k.afterAll)
		for _, feature := range byFeature(scenarios) {
			gk.Describe(feature[0].Feature, func() {
				for _, sc := range feature {
					args := []any{types.CodeLocation{FileName: path.Join(featuresDir, sc.URI), LineNumber: sc.Line}}
					if labels := labelsOf(sc.Tags); len(labels) > 0 {
						args = append(args, gk.Label(labels...))
					}
					gk.It(specName(sc, feature), append(args, k.spec(sc))...)
				}
			})
		}
	})
	return true
}

// kit is the state of the kit's container: its session, once open.
type kit struct {
	open opener
	x    session
	st   settings
}

// beforeAll opens the session.
func (k *kit) beforeAll(ctx gk.SpecContext) {
	var err error
	k.x, k.st, err = k.open(withLogger(ctx))
	if err != nil {
		gk.Fail("drakit conformance: " + err.Error())
	}
}

// afterAll writes the reports of the scenarios that ran.
func (k *kit) afterAll(ctx gk.SpecContext) {
	if k.x == nil {
		return
	}
	_, err := k.x.Close(withLogger(ctx))
	gk.AddReportEntry("drakit conformance reports", k.st.artifacts)
	if err != nil && !errors.Is(err, conformance.ErrNoScenarios) {
		gk.Fail(fmt.Sprintf("write the drakit conformance reports to %s: %v", k.st.artifacts, err))
	}
}

// spec is the body of a scenario's It: it runs the scenario and passes,
// skips or fails as judge says.
func (k *kit) spec(sc report.ScenarioResult) func(gk.SpecContext) {
	return func(ctx gk.SpecContext) {
		if k.x == nil {
			gk.Fail("drakit conformance: no session (its BeforeAll did not run)")
		}
		res, err := k.x.RunScenario(withLogger(ctx), sc.URI, sc.Line)
		if err != nil {
			gk.Fail(err.Error())
		}
		switch v := judge(res, k.st); v.kind {
		case verdictSkip:
			gk.Skip(v.message)
		case verdictFail:
			gk.Fail(v.message)
		}
	}
}

// byFeature groups scenarios, in the order report.Selected lists them (file
// by file), by feature file.
func byFeature(scenarios []report.ScenarioResult) [][]report.ScenarioResult {
	var out [][]report.ScenarioResult
	for _, sc := range scenarios {
		if n := len(out); n > 0 && out[n-1][0].URI == sc.URI {
			out[n-1] = append(out[n-1], sc)
			continue
		}
		out = append(out, []report.ScenarioResult{sc})
	}
	return out
}

// specName is the It text of a scenario: its name, with its line when
// another scenario of its feature has the same name (example rows of an
// outline whose name has no placeholder).
func specName(sc report.ScenarioResult, feature []report.ScenarioResult) string {
	same := 0
	for _, o := range feature {
		if o.Name == sc.Name {
			same++
		}
	}
	if same > 1 {
		return fmt.Sprintf("%s (line %d)", sc.Name, sc.Line)
	}
	return sc.Name
}

// labelsOf are the Ginkgo labels of a scenario with these tags: each tag
// without its "@" where that is a valid label, and its profile's.
func labelsOf(tags []string) []string {
	var labels []string
	add := func(l string) {
		clean, err := types.ValidateAndCleanupLabel(l, types.CodeLocation{})
		if err != nil {
			return
		}
		for _, have := range labels {
			if strings.EqualFold(have, clean) {
				return
			}
		}
		labels = append(labels, clean)
	}
	for _, t := range tags {
		add(strings.TrimPrefix(t, "@"))
	}
	if p, ok := report.ProfileOf(tags); ok {
		add(ProfileLabelPrefix + p)
	}
	return labels
}

// verdictKind is what a spec does with its scenario's outcome.
type verdictKind int

const (
	verdictPass verdictKind = iota
	verdictSkip
	verdictFail
)

// verdict is a spec's outcome and the message it skips or fails with.
type verdict struct {
	kind    verdictKind
	message string
}

// judge maps a scenario's result onto its spec: passed passes; skipped
// skips with the kit's reason, or fails with it when skips fail the run;
// failed fails with the finding and the diagnostics file; undefined and
// pending steps fail, as in the kit's strict runs.
func judge(res report.ScenarioResult, st settings) verdict {
	switch res.Status {
	case report.StatusPassed:
		return verdict{kind: verdictPass}
	case report.StatusSkipped:
		if st.failOnSkip {
			return verdict{verdictFail, "skipped, and skips fail this run (Config.FailOnSkip): " + res.Message}
		}
		return verdict{verdictSkip, res.Message}
	case report.StatusFailed:
		msg := res.Message
		if res.Diagnostics != "" {
			msg += "\ndiagnostics: " + filepath.Join(st.artifacts, filepath.FromSlash(res.Diagnostics))
		}
		return verdict{verdictFail, msg}
	case report.StatusUndefined:
		return verdict{verdictFail, "a step of the scenario is undefined: this build of the kit has no step definition for it"}
	case report.StatusPending:
		return verdict{verdictFail, "a step of the scenario is pending"}
	}
	return verdict{verdictFail, fmt.Sprintf("scenario status %q", res.Status)}
}

// withLogger gives the kit's logs to GinkgoWriter, which shows them with
// the spec's output.
func withLogger(ctx context.Context) context.Context {
	return klog.NewContext(ctx, textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(gk.GinkgoWriter))))
}
