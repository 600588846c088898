package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
	"sigs.k8s.io/yaml"
)

// APIVersion and Kind identify a conformance report document.
const (
	APIVersion = "conformance.drakit.dev/v1alpha1"
	Kind       = "ConformanceReport"
)

// unknown is what the report says for what the runner could not tell.
const unknown = "unknown"

// Input describes a run for its conformance report. What the runner cannot
// tell it leaves empty, and the report says "unknown" rather than guess.
type Input struct {
	// KitVersion is the kit's version. Empty means the main module's version
	// in the running binary's build info (runtime/debug.ReadBuildInfo: the
	// VCS tag or pseudo-version go build stamps, "(devel) <commit>" for a
	// build of a checkout, "(devel)" without VCS
	// information).
	KitVersion string
	// Date is when the run took place; zero means now.
	Date time.Time
	// KubernetesVersion is the API server's version (/version gitVersion).
	KubernetesVersion string
	// FeatureGates are the feature gates the runner knows to be enabled in
	// the cluster. Empty means unknown: a real cluster always has some on.
	FeatureGates []string
	// Driver and DriverVersion name the driver under test.
	Driver        string
	DriverVersion string
	// DeviceKinds are the kinds of device the run requested.
	DeviceKinds []DeviceKind
	// Profile is the profile the run was restricted to; empty means every
	// profile.
	Profile string
	// Tags is the tag filter godog got.
	Tags string
	// Hardware says that the driver manages real devices, not drakit's
	// emulator.
	Hardware bool
	// Features are the run's feature files. Their scenarios that did not
	// run count as skipped, with the tag filter as the reason. Nil means
	// only the scenarios that ran are counted.
	Features fs.FS
}

// DeviceKind is a kind of device: a DeviceClass of the driver.
type DeviceKind struct {
	Name        string `json:"name"`
	DeviceClass string `json:"deviceClass"`
}

// The report document; doc.go shows one.
type document struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Date       string         `json:"date"`
	KitVersion string         `json:"kitVersion"`
	Kubernetes kubernetesInfo `json:"kubernetes"`
	Driver     driverInfo     `json:"driver"`
	Run        runInfo        `json:"run"`
	// Profiles are the profiles of which at least one scenario ran.
	Profiles []profileReport `json:"profiles"`
	// Unprofiled are the scenarios of no profile that did not pass.
	Unprofiled *scenarioLists `json:"unprofiled,omitempty"`
	// ClusterChecks are the cluster checks that ran: they validate the
	// cluster and do not judge the driver.
	ClusterChecks *clusterChecksReport `json:"clusterChecks,omitempty"`
	// Verdict is the run's.
	Verdict verdictReport `json:"verdict"`
	// Warnings are the scenarios' advice that no KEP or API requires:
	// never counted in the verdict.
	Warnings []Reason `json:"warnings,omitempty"`
}

// verdictReport is a run's verdict (Judge).
type verdictReport struct {
	// Result is the Outcome: conformant, not-conformant or
	// could-not-certify.
	Result          Outcome  `json:"result"`
	Findings        []Reason `json:"findings,omitempty"`
	CouldNotCertify []Reason `json:"couldNotCertify,omitempty"`
	// DriverChecks and ClusterChecks count the scenarios that judge the
	// driver and the cluster checks.
	DriverChecks  tally `json:"driverChecks"`
	ClusterChecks tally `json:"clusterChecks"`
}

// clusterChecksReport lists the cluster checks that ran by outcome.
type clusterChecksReport struct {
	Passed []scenarioEntry `json:"passed,omitempty"`
	scenarioLists
}

type kubernetesInfo struct {
	Version             string   `json:"version"`
	EnabledFeatureGates gateList `json:"enabledFeatureGates"`
}

// gateList is a list of feature gates, written as "unknown" when empty.
type gateList []string

func (g gateList) MarshalJSON() ([]byte, error) {
	if len(g) == 0 {
		return json.Marshal(unknown)
	}
	return json.Marshal([]string(g))
}

type driverInfo struct {
	Name        string       `json:"name"`
	Version     string       `json:"version"`
	DeviceKinds []DeviceKind `json:"deviceKinds"`
}

type runInfo struct {
	// Profile is the profile the run was restricted to, or "all".
	Profile string `json:"profile"`
	Tags    string `json:"tags,omitempty"`
	// Hardware is "emulated" or "real".
	Hardware string `json:"hardware"`
	// Seed is the scenario order's seed; absent for the written order.
	Seed int64 `json:"seed,omitempty"`
}

// profileReport is a profile's verdict and scenarios. Its keys come out
// sorted: result right after name, which scripts rely on.
type profileReport struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Result is the profile's Outcome (Judge).
	Result          Outcome  `json:"result"`
	Findings        []Reason `json:"findings,omitempty"`
	CouldNotCertify []Reason `json:"couldNotCertify,omitempty"`
	// Core and Extended count the scenarios that judge the driver;
	// ClusterChecks the cluster checks, whatever their level.
	Core          tally       `json:"core"`
	Extended      tally       `json:"extended"`
	ClusterChecks tally       `json:"clusterChecks"`
	KEPs          []kepReport `json:"keps"`
}

type kepReport struct {
	KEP int `json:"kep"`
	// Gate is the feature gate of the KEP's sub-feature whose scenarios
	// the entry counts (profile.gates); absent for the KEP's own.
	Gate          string `json:"gate,omitempty"`
	Core          tally  `json:"core"`
	Extended      tally  `json:"extended"`
	ClusterChecks tally  `json:"clusterChecks"`
	scenarioLists
}

// scenarioLists are the scenarios that did not pass.
type scenarioLists struct {
	Failed  []scenarioEntry `json:"failed,omitempty"`
	Skipped []scenarioEntry `json:"skipped,omitempty"`
}

// tally counts scenarios; failed includes undefined and pending ones,
// skipped does not include those the cluster is not eligible for.
type tally struct {
	Passed      int `json:"passed"`
	Failed      int `json:"failed"`
	Skipped     int `json:"skipped"`
	NotEligible int `json:"notEligible"`
}

func (t *tally) add(s ScenarioResult) {
	switch {
	case s.Status == StatusPassed:
		t.Passed++
	case s.Status == StatusSkipped && notEligible(s.Message):
		t.NotEligible++
	case s.Status == StatusSkipped:
		t.Skipped++
	default:
		t.Failed++
	}
}

// addTo counts s in the tally of its kind: cluster checks apart, the
// driver's scenarios by level.
func addTo(core, extended, cluster *tally, s ScenarioResult) {
	switch {
	case isClusterCheck(s.Tags):
		cluster.add(s)
	case levelOf(s.Tags) == levelCore:
		core.add(s)
	default:
		extended.add(s)
	}
}

func tallyOf(c Checks) tally {
	return tally{Passed: c.Passed, Failed: c.Failed + c.Undefined + c.Pending, Skipped: c.Skipped, NotEligible: c.NotEligible}
}

type scenarioEntry struct {
	Name string `json:"name"`
	// Location is the feature file and line, relative to the features.
	Location    string `json:"location"`
	Conformance level  `json:"conformance"`
	// Status is failed, undefined or pending for a scenario that failed.
	Status Status `json:"status,omitempty"`
	// Reason is why a scenario was skipped.
	Reason string `json:"reason,omitempty"`
	// Unclaimed says that the driver does not claim the capability the
	// skipped scenario needs.
	Unclaimed bool `json:"unclaimed,omitempty"`
	// ClusterCheck says that the scenario checks the cluster, not the
	// driver.
	ClusterCheck bool `json:"clusterCheck,omitempty"`
	// Error is why a scenario failed.
	Error       string `json:"error,omitempty"`
	Diagnostics string `json:"diagnostics,omitempty"`
}

// WriteConformanceReport writes conformance-report.yaml: the run, the
// driver, per profile its verdict with its reasons and per KEP the Core
// and Extended scenarios and the cluster checks passed, failed and skipped,
// every skip with its reason, the cluster checks, the run's verdict and
// the warnings, which it does not count. v is Judge(r).
func WriteConformanceReport(w io.Writer, in Input, r Result, v Verdict) error {
	scenarios := r.Scenarios
	if in.Features != nil {
		notRun, err := scenariosNotRun(in.Features, r.Scenarios, in.Tags)
		if err != nil {
			return err
		}
		scenarios = append(slices.Clone(scenarios), notRun...)
	}
	slices.SortStableFunc(scenarios, func(a, b ScenarioResult) int {
		if c := strings.Compare(a.URI, b.URI); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	doc := document{
		APIVersion: APIVersion,
		Kind:       Kind,
		Date:       in.Date.UTC().Format(time.RFC3339),
		KitVersion: orUnknown(in.KitVersion),
		Kubernetes: kubernetesInfo{Version: orUnknown(in.KubernetesVersion), EnabledFeatureGates: gateList(in.FeatureGates)},
		Driver:     driverInfo{Name: orUnknown(in.Driver), Version: orUnknown(in.DriverVersion), DeviceKinds: in.DeviceKinds},
		Run:        runInfo{Profile: in.Profile, Tags: in.Tags, Hardware: "emulated", Seed: r.Seed},
		Profiles:   []profileReport{},
		Verdict: verdictReport{Result: v.Outcome, Findings: v.Findings, CouldNotCertify: v.CouldNotCertify,
			DriverChecks: tallyOf(v.Driver), ClusterChecks: tallyOf(v.Cluster)},
		Warnings: v.Warnings,
	}
	if in.Date.IsZero() {
		doc.Date = time.Now().UTC().Format(time.RFC3339)
	}
	if in.KitVersion == "" {
		doc.KitVersion = buildVersion()
	}
	if in.Profile == "" {
		doc.Run.Profile = "all"
	}
	if in.Hardware {
		doc.Run.Hardware = "real"
	}
	if doc.Driver.DeviceKinds == nil {
		doc.Driver.DeviceKinds = []DeviceKind{}
	}
	if len(v.ClusterChecks) > 0 {
		cc := &clusterChecksReport{}
		for _, s := range v.ClusterChecks {
			if s.Status == StatusPassed {
				cc.Passed = append(cc.Passed, entryOf(s))
			}
			cc.add(s)
		}
		doc.ClusterChecks = cc
	}
	var unprofiled scenarioLists
	for _, s := range scenarios {
		inProfile := false
		for _, p := range profiles {
			inProfile = inProfile || p.includes(s.Tags)
		}
		if !inProfile && s.Status != StatusPassed {
			unprofiled.add(s)
		}
	}
	if len(unprofiled.Failed)+len(unprofiled.Skipped) > 0 {
		doc.Unprofiled = &unprofiled
	}
	for _, pv := range v.Profiles {
		doc.Profiles = append(doc.Profiles, profileOf(pv, scenarios))
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode conformance report: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write conformance report: %w", err)
	}
	return nil
}

// profileOf reports a profile's verdict and its scenarios, those the run
// did not select included.
func profileOf(pv ProfileVerdict, scenarios []ScenarioResult) profileReport {
	p, _ := lookupProfile(pv.Name) // a name of profiles: Judge's
	pr := profileReport{Name: p.name, Description: p.description, Result: pv.Outcome, Findings: pv.Findings,
		CouldNotCertify: pv.CouldNotCertify, KEPs: []kepReport{}}
	for _, s := range scenarios {
		if p.includes(s.Tags) {
			addTo(&pr.Core, &pr.Extended, &pr.ClusterChecks, s)
		}
	}
	entries := make([]kepReport, 0, len(p.keps)+len(p.gates))
	for _, kep := range p.keps {
		entries = append(entries, kepReport{KEP: kep})
	}
	for _, g := range p.gates {
		entries = append(entries, kepReport{KEP: g.kep, Gate: g.name})
	}
	for _, kr := range entries {
		for _, s := range scenarios {
			if !p.includes(s.Tags) || kr.Gate != gateOf(s.Tags) || kr.Gate == "" && !slices.Contains(keps(s.Tags), kr.KEP) {
				continue
			}
			addTo(&kr.Core, &kr.Extended, &kr.ClusterChecks, s)
			kr.add(s)
		}
		pr.KEPs = append(pr.KEPs, kr)
	}
	return pr
}

func entryOf(s ScenarioResult) scenarioEntry {
	return scenarioEntry{Name: printable(s.Name), Location: location(s), Conformance: levelOf(s.Tags), ClusterCheck: isClusterCheck(s.Tags)}
}

// add lists a scenario that did not pass.
func (l *scenarioLists) add(s ScenarioResult) {
	e := entryOf(s)
	switch s.Status {
	case StatusPassed:
		return
	case StatusSkipped:
		e.Reason = printable(s.Message)
		e.Unclaimed = UnclaimedSkip(s.Message)
		l.Skipped = append(l.Skipped, e)
	default:
		e.Status = s.Status
		e.Error = printable(s.Message)
		e.Diagnostics = s.Diagnostics
		l.Failed = append(l.Failed, e)
	}
}

// printable makes a message YAML can hold: ESC (of ANSI colour codes in an
// error message) becomes the two characters \e, other control characters
// but newline and tab are dropped.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, strings.ReplaceAll(s, "\x1b", "\\e"))
}

func location(s ScenarioResult) string { return fmt.Sprintf("%s:%d", s.URI, s.Line) }

func orUnknown(s string) string {
	if s == "" {
		return unknown
	}
	return s
}

// buildVersion is the main module's version in the binary's build info.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" {
		return unknown
	}
	if bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	// A build from a checkout: the commit go build stamped, if any.
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return bi.Main.Version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "(devel) " + rev
}

// scenariosNotRun returns the scenarios (outline rows included) of the
// feature files in fsys that are not among ran, as skipped, with the tag
// filter as the reason.
func scenariosNotRun(fsys fs.FS, ran []ScenarioResult, tags string) ([]ScenarioResult, error) {
	seen := map[string]bool{}
	for _, s := range ran {
		seen[location(s)] = true
	}
	reason := fmt.Sprintf("not run: the run's tag filter %q does not select it", tags)
	if strings.TrimSpace(tags) == "" {
		reason = "not run"
	}
	all, err := allScenarios(fsys)
	if err != nil {
		return nil, err
	}
	var out []ScenarioResult
	for _, s := range all {
		if !seen[location(s)] {
			s.Status, s.Message = StatusSkipped, reason
			out = append(out, s)
		}
	}
	return out, nil
}

// allScenarios returns the scenarios (outline rows included) of the
// feature files in fsys, in file and line order, without a status.
func allScenarios(fsys fs.FS) ([]ScenarioResult, error) {
	var out []ScenarioResult
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("list features: %w", err)
		}
		if d.IsDir() || !strings.HasSuffix(path, ".feature") {
			return nil
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return fmt.Errorf("read feature %s: %w", path, err)
		}
		ids := &messages.Incrementing{}
		doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(data), ids.NewId)
		if err != nil {
			return fmt.Errorf("parse feature %s: %w", path, err)
		}
		if doc.Feature == nil {
			return nil
		}
		lines := nodeLines(doc.Feature.Children)
		for _, p := range gherkin.Pickles(*doc, path, ids.NewId) {
			s := ScenarioResult{Feature: doc.Feature.Name, URI: path, Name: p.Name}
			if n := len(p.AstNodeIds); n > 0 {
				s.Line = lines[p.AstNodeIds[n-1]]
			}
			for _, t := range p.Tags {
				if !slices.Contains(s.Tags, t.Name) {
					s.Tags = append(s.Tags, t.Name)
				}
			}
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// nodeLines maps the ids of scenarios and example rows to their lines, the
// lines cucumber reports give them.
func nodeLines(children []*messages.FeatureChild) map[string]int {
	lines := map[string]int{}
	add := func(sc *messages.Scenario) {
		lines[sc.Id] = int(sc.Location.Line)
		for _, ex := range sc.Examples {
			for _, row := range ex.TableBody {
				lines[row.Id] = int(row.Location.Line)
			}
		}
	}
	for _, c := range children {
		if c.Scenario != nil {
			add(c.Scenario)
		}
		if c.Rule != nil {
			for _, rc := range c.Rule.Children {
				if rc.Scenario != nil {
					add(rc.Scenario)
				}
			}
		}
	}
	return lines
}
