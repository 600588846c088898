package interpose

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/util/validation/field"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"drakit.dev/drakit/internal/strictyaml"
)

// The rules file format.
const (
	APIVersion = "interpose.drakit.dev/v1alpha1"
	Kind       = "FaultRules"
)

// Methods a rule can name.
const (
	MethodPrepare   = "NodePrepareResources"
	MethodUnprepare = "NodeUnprepareResources"
)

// Points of a call at which a rule fires.
const (
	// PointBefore fires before the call is forwarded to the driver.
	PointBefore = "before"
	// PointAfter fires once the driver answered, before the caller gets
	// the answer.
	PointAfter = "after"
)

// ErrInvalidRules classifies every error of ParseRules and Rule.Validate.
var ErrInvalidRules = errors.New("invalid fault rules")

// RuleFile is the rules file (apiVersion interpose.drakit.dev/v1alpha1,
// kind FaultRules).
type RuleFile struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Rules      []Rule `json:"rules"`
}

// Rule is one fault: at Point of Method (for a call naming Claim, when
// set), the action, exactly one of Delay, Error, Drop, ClaimError, Exec and
// Hook. Times limits how often it fires (0: on every matching call).
type Rule struct {
	// Name labels the rule in records; empty: a description of the rule.
	Name   string `json:"name,omitempty"`
	Method string `json:"method"`
	Point  string `json:"point"`
	// Claim restricts the rule to calls naming this claim: its UID, its
	// name or namespace/name.
	Claim string `json:"claim,omitempty"`
	Times int    `json:"times,omitempty"`

	// Delay holds the call this long (a Go duration, "2s").
	Delay string `json:"delay,omitempty"`
	// Error answers the call with this gRPC status instead.
	Error *StatusError `json:"error,omitempty"`
	// Drop closes the caller's connection: the caller sees the transport
	// fail (a kubelet: Unavailable), the call is never answered.
	Drop bool `json:"drop,omitempty"`
	// ClaimError replaces the answer for one claim (Claim, else the
	// request's first) with this per-claim error (point after only).
	ClaimError string `json:"claimError,omitempty"`
	// Exec runs this command (argv, no shell) and waits for it, e.g. one
	// that restarts the driver; the call goes on whatever it exits with.
	Exec []string `json:"exec,omitempty"`
	// Hook calls the library hook of this name (Config.Hooks).
	Hook string `json:"hook,omitempty"`
}

// StatusError is a gRPC status: Code by name as grpc-go spells it
// ("Unavailable", "DeadlineExceeded", …).
type StatusError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// codeByName maps grpc-go's code names to codes, OK excluded.
var codeByName = func() map[string]codes.Code {
	m := map[string]codes.Code{}
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		m[c.String()] = c
	}
	return m
}()

// codeNames are the accepted code names, sorted.
func codeNames() []string {
	names := make([]string, 0, len(codeByName))
	for n := range codeByName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Validate reports every problem of r with its field path below path; the
// error wraps ErrInvalidRules.
func (r Rule) Validate(path *field.Path) error {
	if errs := r.validate(path); len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidRules, errs.ToAggregate())
	}
	return nil
}

func (r Rule) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains([]string{MethodPrepare, MethodUnprepare}, r.Method) {
		errs = append(errs, field.NotSupported(path.Child("method"), r.Method, []string{MethodPrepare, MethodUnprepare}))
	}
	if !slices.Contains([]string{PointBefore, PointAfter}, r.Point) {
		errs = append(errs, field.NotSupported(path.Child("point"), r.Point, []string{PointBefore, PointAfter}))
	}
	if r.Times < 0 {
		errs = append(errs, field.Invalid(path.Child("times"), r.Times, "must be 0 (every call) or more"))
	}
	var actions []string
	if r.Delay != "" {
		actions = append(actions, "delay")
		if d, err := time.ParseDuration(r.Delay); err != nil || d <= 0 {
			errs = append(errs, field.Invalid(path.Child("delay"), r.Delay, "want a positive Go duration such as 2s"))
		}
	}
	if r.Error != nil {
		actions = append(actions, "error")
		if _, ok := codeByName[r.Error.Code]; !ok {
			errs = append(errs, field.NotSupported(path.Child("error", "code"), r.Error.Code, codeNames()))
		}
	}
	if r.Drop {
		actions = append(actions, "drop")
	}
	if r.ClaimError != "" {
		actions = append(actions, "claimError")
		if r.Point != PointAfter {
			errs = append(errs, field.Invalid(path.Child("claimError"), r.ClaimError, "replaces the driver's answer: needs point after"))
		}
	}
	if r.Exec != nil {
		actions = append(actions, "exec")
		if len(r.Exec) == 0 || r.Exec[0] == "" {
			errs = append(errs, field.Required(path.Child("exec").Index(0), "the command to run"))
		}
	}
	if r.Hook != "" {
		actions = append(actions, "hook")
	}
	switch len(actions) {
	case 0:
		errs = append(errs, field.Required(path, "one action: delay, error, drop, claimError, exec or hook"))
	case 1:
	default:
		errs = append(errs, field.Invalid(path, strings.Join(actions, ", "), "want exactly one action"))
	}
	return errs
}

// label is the rule's name, else what it does.
func (r Rule) label() string {
	if r.Name != "" {
		return r.Name
	}
	var action string
	switch {
	case r.Delay != "":
		action = "delay " + r.Delay
	case r.Error != nil:
		action = "error " + r.Error.Code
	case r.Drop:
		action = "drop"
	case r.ClaimError != "":
		action = "claimError"
	case r.Exec != nil:
		action = "exec " + r.Exec[0]
	default:
		action = "hook " + r.Hook
	}
	return fmt.Sprintf("%s %s %s", action, r.Point, r.Method)
}

// ParseRules decodes a rules file strictly (unknown fields, wrong types,
// a second document are errors) and validates every rule; the error wraps
// ErrInvalidRules and names each field.
func ParseRules(data []byte) ([]Rule, error) {
	var f RuleFile
	errs, err := strictyaml.Decode(data, APIVersion, Kind, &f)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRules, err)
	}
	if len(errs) == 0 {
		for i, r := range f.Rules {
			errs = append(errs, r.validate(field.NewPath("rules").Index(i))...)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRules, errs.ToAggregate())
	}
	return f.Rules, nil
}

// LoadRules reads and parses a rules file.
func LoadRules(path string) ([]Rule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read rules %s: %w", path, err)
	}
	rules, err := ParseRules(data)
	if err != nil {
		return nil, fmt.Errorf("rules %s: %w", path, err)
	}
	return rules, nil
}

// ArmedRule is a rule as the interposer holds it.
type ArmedRule struct {
	ID int `json:"id"`
	Rule
	// Fired counts the calls it fired on; with Times, it is dropped once
	// Fired reaches Times.
	Fired int `json:"fired"`
}

// ruleSet holds the armed rules; safe for concurrent use.
type ruleSet struct {
	mu     sync.Mutex
	nextID int
	rules  []*ArmedRule
}

// add arms a valid rule and returns its ID.
func (s *ruleSet) add(r Rule) (int, error) {
	if err := r.Validate(field.NewPath("rule")); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.rules = append(s.rules, &ArmedRule{ID: s.nextID, Rule: r})
	return s.nextID, nil
}

// clear disarms every rule and says how many there were.
func (s *ruleSet) clear() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.rules)
	s.rules = nil
	return n
}

// list returns copies of the armed rules in the order they were added.
func (s *ruleSet) list() []ArmedRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ArmedRule, 0, len(s.rules))
	for _, r := range s.rules {
		out = append(out, *r)
	}
	return out
}

// take returns the rules that fire at point of method for a call naming
// claims, in the order they were added, counting each firing and dropping
// a rule once it fired Times times.
func (s *ruleSet) take(method, point string, claims []*drapb.Claim) []ArmedRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	var fired []ArmedRule
	kept := s.rules[:0]
	for _, r := range s.rules {
		if r.Method == method && r.Point == point && (r.Claim == "" || claimIndex(claims, r.Claim) >= 0) {
			r.Fired++
			fired = append(fired, *r)
			if r.Times > 0 && r.Fired >= r.Times {
				continue
			}
		}
		kept = append(kept, r)
	}
	s.rules = kept
	return fired
}

// claimIndex is the index of the claim named ref (UID, name or
// namespace/name) in claims, -1 when none is.
func claimIndex(claims []*drapb.Claim, ref string) int {
	for i, c := range claims {
		if c.GetUid() == ref || c.GetName() == ref || c.GetNamespace()+"/"+c.GetName() == ref {
			return i
		}
	}
	return -1
}
