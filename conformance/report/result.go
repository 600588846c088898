package report

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Status is a scenario's outcome.
type Status string

// Scenario outcomes. Skipped scenarios ran a capability check that said the
// cluster or driver cannot exercise them; they are never counted as passed.
const (
	StatusPassed    Status = "passed"
	StatusFailed    Status = "failed"
	StatusSkipped   Status = "skipped"
	StatusUndefined Status = "undefined"
	StatusPending   Status = "pending"
)

// Counts are scenario outcomes.
type Counts struct {
	Passed, Failed, Skipped, Undefined, Pending int
}

// Total is the number of scenarios counted.
func (c Counts) Total() int { return c.Passed + c.Failed + c.Skipped + c.Undefined + c.Pending }

func (c *Counts) add(s Status) {
	switch s {
	case StatusPassed:
		c.Passed++
	case StatusFailed:
		c.Failed++
	case StatusSkipped:
		c.Skipped++
	case StatusUndefined:
		c.Undefined++
	case StatusPending:
		c.Pending++
	}
}

// ScenarioResult is one scenario (one example row of an outline).
type ScenarioResult struct {
	// Feature is the name of the scenario's feature.
	Feature string
	// URI is the feature file, relative to the features directory.
	URI  string
	Line int
	Name string
	// Tags are the scenario's tags, feature tags included, without
	// duplicates.
	Tags   []string
	Status Status
	// Message is the failure of the first failed step, or the skip reason.
	Message string
	// Diagnostics is the diagnostics file, relative to the artifacts
	// directory, when the scenario failed.
	Diagnostics string
	// Duration is the time its steps took.
	Duration time.Duration
	// Claimed are the capabilities the driver claims that the scenario
	// needs: its steps found them claimed (ClaimedCapabilityAttachment).
	Claimed []string
	// Warnings are what its steps advise that no KEP or API requires
	// (WarningAttachment); they never change its status or the verdict.
	Warnings []string
	// KitFailure says that the scenario failed for want of what the kit
	// needed, not through the driver: its first failed step carries
	// KitFailureAttachment. It keeps the kit from certifying the driver
	// and is no finding.
	KitFailure bool
}

// Result is the outcome of a run.
type Result struct {
	// Counts are over all scenarios.
	Counts
	// ByTag counts the scenarios of each KEP tag (@kep-<number>) and of
	// each profile's gate tag (@DRAPartitionableDevicesType); scenarios
	// without a KEP tag are counted under NoKEPTag.
	ByTag     map[string]Counts
	Scenarios []ScenarioResult
	// Seed is the scenario order seed; 0 means the written order.
	Seed int64
	// SkipsFail makes a skipped Extended scenario and cluster check keep
	// the kit from certifying the driver, as a skipped Core scenario always
	// does (Config.FailOnSkip; Judge).
	SkipsFail bool
}

// Attachment names ParseCucumberJSON recognizes in the cucumber report: the
// skip reason attached to a skipped step, a scenario's diagnostics file
// attached as DiagnosticsDir/<file>, the name of a capability the
// scenario needs that a step found the driver claims, a warning: what
// a step advises though no KEP or API requires it, and the mark of a step
// that failed through the kit or what it was given (a fault command that
// failed, a driver it could not stop), not through the driver.
const (
	SkipReasonAttachment        = "skip-reason"
	DiagnosticsDir              = "diagnostics"
	ClaimedCapabilityAttachment = "claimed-capability"
	WarningAttachment           = "warning"
	KitFailureAttachment        = "kit-failure"
)

// NoKEPTag is the ByTag key of scenarios without a @kep-<number> tag.
const NoKEPTag = "(no KEP tag)"

var kepTag = regexp.MustCompile(`^@kep-[0-9]+$`)

// Cucumber JSON, as godog's cucumber formatter writes it; only the fields
// the kit reads.
type cukeFeature struct {
	URI      string        `json:"uri"`
	Name     string        `json:"name"`
	Elements []cukeElement `json:"elements"`
}

type cukeElement struct {
	Name  string     `json:"name"`
	Line  int        `json:"line"`
	Type  string     `json:"type"`
	Tags  []cukeTag  `json:"tags"`
	Steps []cukeStep `json:"steps"`
}

type cukeTag struct {
	Name string `json:"name"`
}

type cukeStep struct {
	Keyword    string          `json:"keyword"`
	Name       string          `json:"name"`
	Result     cukeResult      `json:"result"`
	Embeddings []cukeEmbedding `json:"embeddings"`
}

type cukeResult struct {
	Status string `json:"status"`
	Error  string `json:"error_message"`
	// Duration is in nanoseconds; absent for steps that did not run.
	Duration *int64 `json:"duration"`
}

type cukeEmbedding struct {
	Name     string `json:"name"`
	MimeType string `json:"mime_type"`
	Data     string `json:"data"`
}

// ParseCucumberJSON builds a Result from godog's cucumber report.
func ParseCucumberJSON(r io.Reader) (Result, error) {
	var features []cukeFeature
	if err := json.NewDecoder(r).Decode(&features); err != nil {
		return Result{}, fmt.Errorf("decode cucumber report: %w", err)
	}
	res := Result{ByTag: map[string]Counts{}}
	for _, f := range features {
		for _, e := range f.Elements {
			if e.Type != "" && e.Type != "scenario" {
				continue
			}
			sr, err := scenarioResult(f.Name, f.URI, e)
			if err != nil {
				return Result{}, err
			}
			res.Scenarios = append(res.Scenarios, sr)
			res.Counts.add(sr.Status)
			keps := 0
			for _, t := range sr.Tags {
				if kepTag.MatchString(t) || slices.Contains(gateTags(0), t) {
					c := res.ByTag[t]
					c.add(sr.Status)
					res.ByTag[t] = c
				}
				if kepTag.MatchString(t) {
					keps++
				}
			}
			if keps == 0 {
				c := res.ByTag[NoKEPTag]
				c.add(sr.Status)
				res.ByTag[NoKEPTag] = c
			}
		}
	}
	return res, nil
}

// scenarioResult derives a scenario's status from its steps: any failed or
// ambiguous step fails it; otherwise undefined, pending, then skipped steps
// decide; it passed only if every step passed.
func scenarioResult(feature, uri string, e cukeElement) (ScenarioResult, error) {
	sr := ScenarioResult{Feature: feature, URI: uri, Line: e.Line, Name: e.Name}
	seenTag := map[string]bool{}
	for _, t := range e.Tags {
		if !seenTag[t.Name] {
			seenTag[t.Name] = true
			sr.Tags = append(sr.Tags, t.Name)
		}
	}
	has := map[string]bool{}
	for _, st := range e.Steps {
		has[st.Result.Status] = true
		if st.Result.Duration != nil {
			sr.Duration += time.Duration(*st.Result.Duration)
		}
		// Only the first failure decides whose it is: a later one may
		// follow from it.
		first := false
		if (st.Result.Status == "failed" || st.Result.Status == "ambiguous") && sr.Message == "" {
			first = true
			sr.Message = st.Result.Error
			if sr.Message == "" {
				sr.Message = fmt.Sprintf("step %q %s", strings.TrimSpace(st.Keyword)+" "+st.Name, st.Result.Status)
			}
		}
		for _, emb := range st.Embeddings {
			body, err := base64.StdEncoding.DecodeString(emb.Data)
			if err != nil {
				return ScenarioResult{}, fmt.Errorf("decode attachment %s of %s:%d: %w", emb.Name, uri, e.Line, err)
			}
			switch {
			case emb.Name == SkipReasonAttachment:
				if st.Result.Status == "skipped" {
					sr.Message = string(body)
				}
			case strings.HasPrefix(emb.Name, DiagnosticsDir+"/"):
				sr.Diagnostics = emb.Name
			case emb.Name == ClaimedCapabilityAttachment && !slices.Contains(sr.Claimed, string(body)):
				sr.Claimed = append(sr.Claimed, string(body))
			case emb.Name == WarningAttachment:
				sr.Warnings = append(sr.Warnings, string(body))
			case emb.Name == KitFailureAttachment && first && st.Result.Status == "failed":
				sr.KitFailure = true
			}
		}
	}
	switch {
	case has["failed"] || has["ambiguous"]:
		sr.Status = StatusFailed
	case has["undefined"] || len(e.Steps) == 0:
		sr.Status = StatusUndefined
	case has["pending"]:
		sr.Status = StatusPending
	case has["skipped"]:
		sr.Status = StatusSkipped
	default:
		sr.Status = StatusPassed
	}
	if sr.Status != StatusFailed && sr.Status != StatusSkipped {
		sr.Message = ""
	}
	if sr.Status == StatusSkipped && sr.Message == "" {
		sr.Message = "skipped without a recorded reason"
	}
	return sr, nil
}
