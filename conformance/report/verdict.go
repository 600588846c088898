package report

import (
	"fmt"
	"slices"
	"strings"
)

// Outcome is a verdict, of a profile or of a run, in the report's words
// (conformance-report.yaml's result).
type Outcome string

// Outcomes. A run's outcome is one of the first three.
const (
	// Conformant: every scenario of the driver that ran passed, and no
	// Core one was left unchecked.
	Conformant Outcome = "conformant"
	// NotConformant: a scenario of the driver failed, or a capability the
	// driver claims could not be checked.
	NotConformant Outcome = "not-conformant"
	// CouldNotCertify: the kit could not check what it must (a Core
	// scenario skipped for want of access or a declaration field, a step
	// without a definition, a cluster check failed), or nothing exercised
	// the driver.
	CouldNotCertify Outcome = "could-not-certify"
	// NotApplicable: no scenario of the profile exercised the driver; it
	// does not claim what the profile is about.
	NotApplicable Outcome = "not-applicable"
	// NotEligible: the cluster cannot run the profile's scenarios (its
	// version, feature gates or served APIs).
	NotEligible Outcome = "not-eligible"
)

// String is the outcome in the summary's and the console's words.
func (o Outcome) String() string {
	switch o {
	case Conformant:
		return "Conformant"
	case NotConformant:
		return "Not conformant"
	case CouldNotCertify:
		return "Could not certify"
	case NotApplicable:
		return "Not applicable"
	case NotEligible:
		return "Not eligible"
	}
	return string(o)
}

// Exit codes of drakit conformance and drakit conformance summarize.
const (
	ExitConformant      = 0
	ExitNotConformant   = 1
	ExitUsage           = 2
	ExitCouldNotCertify = 3
)

// ExitCode is the exit code of a run with this outcome.
func (o Outcome) ExitCode() int {
	switch o {
	case Conformant:
		return ExitConformant
	case NotConformant:
		return ExitNotConformant
	}
	return ExitCouldNotCertify
}

// Reason is why a verdict is not Conformant: a finding against the driver,
// or what kept the kit from certifying it. Name and Location are empty
// for a reason of the whole run ("no scenario ran").
type Reason struct {
	Name        string `json:"name,omitempty"`
	Location    string `json:"location,omitempty"`
	Conformance level  `json:"conformance,omitempty"`
	Message     string `json:"message"`
	Diagnostics string `json:"diagnostics,omitempty"`
}

// ProfileVerdict is one profile's verdict on the driver.
type ProfileVerdict struct {
	Name    string
	Outcome Outcome
	// Findings make it NotConformant; CouldNotCertify reasons make it
	// CouldNotCertify when there is no finding.
	Findings        []Reason
	CouldNotCertify []Reason
}

// Checks counts scenarios; a skip whose reason starts with
// NotEligiblePrefix counts as NotEligible, not as Skipped.
type Checks struct {
	Passed, Failed, Skipped, NotEligible, Undefined, Pending int
}

// Total is the number of scenarios counted.
func (c Checks) Total() int {
	return c.Passed + c.Failed + c.Skipped + c.NotEligible + c.Undefined + c.Pending
}

func (c *Checks) add(s ScenarioResult) {
	switch {
	case s.Status == StatusPassed:
		c.Passed++
	case s.Status == StatusFailed:
		c.Failed++
	case s.Status == StatusSkipped && notEligible(s.Message):
		c.NotEligible++
	case s.Status == StatusSkipped:
		c.Skipped++
	case s.Status == StatusUndefined:
		c.Undefined++
	case s.Status == StatusPending:
		c.Pending++
	}
}

// String is the counts in the summary's words.
func (c Checks) String() string {
	return fmt.Sprintf("%d total, %d passed, %d failed, %d skipped, %d not eligible, %d undefined, %d pending",
		c.Total(), c.Passed, c.Failed, c.Skipped, c.NotEligible, c.Undefined, c.Pending)
}

// Verdict is the judgement of a run, made once (Judge) and written
// everywhere: the summary, conformance-report.yaml, the console's last
// line and the exit code.
type Verdict struct {
	Outcome Outcome
	// Profiles are the verdicts of the profiles of which a scenario ran, in
	// profile order.
	Profiles []ProfileVerdict
	// Findings and CouldNotCertify are every profile's, those of the
	// scenarios of no profile, and the run's own.
	Findings        []Reason
	CouldNotCertify []Reason
	// Driver counts the scenarios that judge the driver; Cluster the
	// cluster checks (ClusterCheckTag), which do not.
	Driver, Cluster Checks
	// ClusterChecks are the cluster checks that ran, in run order.
	ClusterChecks []ScenarioResult
	// Warnings are every scenario's (ScenarioResult.Warnings), in run
	// order: advice that no KEP or API requires, never counted.
	Warnings []Reason
}

// Line is the verdict's last line in the summary and on the console, and
// the message drakit conformance exits with when the run is not
// Conformant.
func (v Verdict) Line() string {
	switch v.Outcome {
	case NotConformant:
		return "verdict: " + v.Outcome.String() + " (" + plural(len(v.Findings), "finding") + ")"
	case CouldNotCertify:
		return "verdict: " + v.Outcome.String() + " (" + plural(len(v.CouldNotCertify), "reason") + ")"
	}
	return "verdict: " + v.Outcome.String()
}

// ExitCode is the exit code of the run.
func (v Verdict) ExitCode() int { return v.Outcome.ExitCode() }

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Judge is the verdict of a run on the scenarios it selected; those its
// tag filter left out are not judged. Cluster checks (ClusterCheckTag) are
// counted apart and never make a profile's verdict. Per profile, over the
// scenarios that judge the driver:
//
//   - a failed scenario, Core or Extended, is a finding, unless the kit
//     failed it (ScenarioResult.KitFailure); so is a skipped one
//     that needed a capability the driver claims (ScenarioResult.Claimed),
//     unless it does not apply (UnclaimedSkip) or the cluster is not
//     eligible (NotEligiblePrefix): a claimed capability that cannot be
//     checked is a failure;
//   - an undefined or pending step (a defect of the kit, not the driver's),
//     a scenario the kit failed (a fault command that failed, a driver it
//     could not stop), a Core scenario skipped for any other reason
//     (access the kit lacks, a declaration field it needs), and with
//     SkipsFail an Extended one too, keep the kit from certifying the
//     profile;
//   - Not conformant with a finding, else Could not certify with such a
//     reason, else Conformant when a scenario passed; else Not eligible
//     when one was not eligible, and Not applicable otherwise: no scenario
//     exercised the driver (they did not apply to it, only cluster checks
//     ran, or only Extended ones that could not run).
//
// Warnings are listed, never judged. The run is Not conformant with a
// finding anywhere; else Could not
// certify when a profile could not be certified, a cluster check failed,
// was undefined or pending (or, with SkipsFail, skipped other than as not
// applying or not eligible), no scenario of the driver passed, or none
// ran; else Conformant.
func Judge(r Result) Verdict {
	v := Verdict{Profiles: []ProfileVerdict{}}
	byProfile := map[string][]ScenarioResult{}
	for _, s := range r.Scenarios {
		if isClusterCheck(s.Tags) {
			v.Cluster.add(s)
			v.ClusterChecks = append(v.ClusterChecks, s)
		} else {
			v.Driver.add(s)
		}
		name, _ := ProfileOf(s.Tags)
		byProfile[name] = append(byProfile[name], s)
		for _, w := range s.Warnings {
			v.Warnings = append(v.Warnings, reasonOf(s, w))
		}
	}
	for _, p := range profiles {
		if list, ok := byProfile[p.name]; ok {
			pv := judgeProfile(p.name, list, r.SkipsFail)
			v.Profiles = append(v.Profiles, pv)
			v.Findings = append(v.Findings, pv.Findings...)
			v.CouldNotCertify = append(v.CouldNotCertify, pv.CouldNotCertify...)
		}
	}
	if list, ok := byProfile[""]; ok {
		pv := judgeProfile("", list, r.SkipsFail)
		v.Findings = append(v.Findings, pv.Findings...)
		v.CouldNotCertify = append(v.CouldNotCertify, pv.CouldNotCertify...)
	}
	for _, s := range v.ClusterChecks {
		switch {
		case s.Status == StatusFailed:
			v.CouldNotCertify = append(v.CouldNotCertify, reasonOf(s, "the cluster failed a cluster check (the API server, scheduler or controllers, not the driver): "+s.Message))
		case s.Status == StatusUndefined || s.Status == StatusPending:
			v.CouldNotCertify = append(v.CouldNotCertify, reasonOf(s, kitDefect(s)))
		case s.Status == StatusSkipped && r.SkipsFail && !exempt(s.Message):
			v.CouldNotCertify = append(v.CouldNotCertify, reasonOf(s, "skipped, and skips fail this run (--fail-on-skip): "+s.Message))
		}
	}
	switch {
	case len(r.Scenarios) == 0:
		v.CouldNotCertify = append(v.CouldNotCertify, Reason{Message: "no scenario ran"})
	case v.Driver.Passed == 0:
		v.CouldNotCertify = append(v.CouldNotCertify, Reason{Message: "no scenario exercised the driver: none of those that judge it passed"})
	}
	switch {
	case len(v.Findings) > 0:
		v.Outcome = NotConformant
	case len(v.CouldNotCertify) > 0:
		v.Outcome = CouldNotCertify
	default:
		v.Outcome = Conformant
	}
	return v
}

// judgeProfile is the verdict of a profile whose scenarios ran with these
// results (Judge's rules).
func judgeProfile(name string, scenarios []ScenarioResult, skipsFail bool) ProfileVerdict {
	pv := ProfileVerdict{Name: name}
	var passed, eligibility bool
	for _, s := range scenarios {
		if isClusterCheck(s.Tags) {
			continue
		}
		switch s.Status {
		case StatusPassed:
			passed = true
		case StatusFailed:
			f := reasonOf(s, s.Message)
			f.Diagnostics = s.Diagnostics
			if s.KitFailure {
				f.Message = printable("the kit could not carry out a step, which says nothing of the driver: " + s.Message)
				pv.CouldNotCertify = append(pv.CouldNotCertify, f)
				break
			}
			pv.Findings = append(pv.Findings, f)
		case StatusUndefined, StatusPending:
			pv.CouldNotCertify = append(pv.CouldNotCertify, reasonOf(s, kitDefect(s)))
		case StatusSkipped:
			switch {
			case notEligible(s.Message):
				eligibility = true
			case UnclaimedSkip(s.Message):
			case len(s.Claimed) > 0:
				pv.Findings = append(pv.Findings, reasonOf(s, fmt.Sprintf("claimed capability %s could not be checked: %s", strings.Join(s.Claimed, ", "), s.Message)))
			case levelOf(s.Tags) == levelCore:
				pv.CouldNotCertify = append(pv.CouldNotCertify, reasonOf(s, "a Core scenario could not run: "+s.Message))
			case skipsFail:
				pv.CouldNotCertify = append(pv.CouldNotCertify, reasonOf(s, "skipped, and skips fail this run (--fail-on-skip): "+s.Message))
			}
		}
	}
	switch {
	case len(pv.Findings) > 0:
		pv.Outcome = NotConformant
	case len(pv.CouldNotCertify) > 0:
		pv.Outcome = CouldNotCertify
	case passed:
		pv.Outcome = Conformant
	case eligibility:
		pv.Outcome = NotEligible
	default:
		pv.Outcome = NotApplicable
	}
	return pv
}

// CombinedOutcome is the outcome of several runs: Not conformant when one
// is, else Could not certify when one is or there are none, else
// Conformant.
func CombinedOutcome(verdicts []Verdict) Outcome {
	if len(verdicts) == 0 {
		return CouldNotCertify
	}
	out := Conformant
	for _, v := range verdicts {
		switch v.Outcome {
		case NotConformant:
			return NotConformant
		case CouldNotCertify:
			out = CouldNotCertify
		}
	}
	return out
}

func reasonOf(s ScenarioResult, msg string) Reason {
	return Reason{Name: printable(s.Name), Location: location(s), Conformance: levelOf(s.Tags), Message: printable(msg)}
}

// kitDefect is the reason of an undefined or pending scenario.
func kitDefect(s ScenarioResult) string {
	if s.Status == StatusPending {
		return "a step is pending: the kit does not implement it yet"
	}
	return "a step has no definition: a defect of the kit, not of the driver"
}

func isClusterCheck(tags []string) bool { return slices.Contains(tags, ClusterCheckTag) }

func notEligible(reason string) bool { return strings.HasPrefix(reason, NotEligiblePrefix) }

// exempt says whether a skip reason says that the scenario does not apply
// to the driver or that the cluster cannot run it: such skips never keep
// the kit from certifying.
func exempt(reason string) bool { return UnclaimedSkip(reason) || notEligible(reason) }
