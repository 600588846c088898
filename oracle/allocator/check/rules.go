package check

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidInput is wrapped by the error Check returns for malformed input.
var ErrInvalidInput = errors.New("invalid check input")

// Rule names one validity rule. It is an error so that errors.Is(err, Rule)
// finds a violation of that rule in Check's joined error.
type Rule string

func (r Rule) Error() string { return string(r) }

// The rules Check enforces; see the package documentation.
const (
	RuleMaxResults        Rule = "max-results"
	RuleDevice            Rule = "device-in-valid-pool"
	RuleNodeAccess        Rule = "node-access"
	RuleRequestName       Rule = "request-name"
	RuleCount             Rule = "exact-count"
	RuleAll               Rule = "all-devices"
	RuleClass             Rule = "device-class"
	RuleSelector          Rule = "selector"
	RuleMatchAttribute    Rule = "match-attribute"
	RuleDistinctAttribute Rule = "distinct-attribute"
	RuleInUse             Rule = "device-in-use"
	RuleCapacity          Rule = "consumable-capacity"
	RuleShareID           Rule = "share-id"
	RuleCounters          Rule = "shared-counters"
	RuleTaint             Rule = "taint"
	RuleAdminAccess       Rule = "admin-access"
	RuleNodeSelector      Rule = "node-selector"
	RuleFeature           Rule = "feature-disabled"
)

// Violation is one broken rule.
type Violation struct {
	// Claim is "namespace/name" of the claim, or empty for a pool-wide rule.
	Claim string
	// Request is the result's or the claim's request name, if any.
	Request string
	// Device is "driver/pool/device", if one device is at fault.
	Device string
	Rule   Rule
	Detail string
}

func (v *Violation) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", v.Rule)
	if v.Claim != "" {
		fmt.Fprintf(&b, " claim %s", v.Claim)
	}
	if v.Request != "" {
		fmt.Fprintf(&b, " request %s", v.Request)
	}
	if v.Device != "" {
		fmt.Fprintf(&b, " device %s", v.Device)
	}
	fmt.Fprintf(&b, ": %s", v.Detail)
	return b.String()
}

// Unwrap makes errors.Is(v, v.Rule) true.
func (v *Violation) Unwrap() error { return v.Rule }

// Violations lists the violations in an error returned by Check.
func Violations(err error) []*Violation {
	var out []*Violation
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if v, ok := err.(*Violation); ok {
			out = append(out, v)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}
