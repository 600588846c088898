package faults

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"drakit.dev/drakit/conformance/declaration"
)

// faultResponse is a parsed Config.FaultResponses entry: what the driver
// answers when the hardware under one of its devices reports the fault.
type faultResponse struct {
	// fault is the fault as the fault command takes it ({fault}): a name,
	// or an Xid in decimal.
	fault  string
	health string
	// taint is the taint effect, "" for none.
	taint string
}

// parseFaultResponses parses "<fault>=<health>[/<taint>]" entries, the form
// declaration.FormatFaultResponse writes; an error names each bad entry.
func parseFaultResponses(entries []string) ([]faultResponse, error) {
	var (
		out  []faultResponse
		errs []error
		seen = map[string]bool{}
	)
	for _, e := range entries {
		fault, answer, ok := strings.Cut(e, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%q: want <fault>=<health>[/<taint effect>], e.g. 48=Unhealthy/NoExecute (an Xid) or ecc-double=Unhealthy", e))
			continue
		}
		if err := declaration.ValidateFaultName(fault); err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", e, err))
			continue
		}
		health, taint, _ := strings.Cut(answer, "/")
		if health != declaration.FaultHealthy && health != declaration.FaultUnhealthy {
			errs = append(errs, fmt.Errorf("%q: health %q is neither %s nor %s", e, health, declaration.FaultHealthy, declaration.FaultUnhealthy))
			continue
		}
		if taint != "" && !slices.Contains(declaration.FaultTaintEffects, taint) {
			errs = append(errs, fmt.Errorf("%q: taint effect %q is not one of %s", e, taint, strings.Join(declaration.FaultTaintEffects, ", ")))
			continue
		}
		if seen[fault] {
			errs = append(errs, fmt.Errorf("%q: fault %s answered twice", e, fault))
			continue
		}
		seen[fault] = true
		out = append(out, faultResponse{fault: fault, health: health, taint: taint})
	}
	return out, errors.Join(errs...)
}
