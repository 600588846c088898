package conformance

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"drakit.dev/drakit/conformance/declaration"
)

// faultResponse is a parsed Config.FaultResponses entry: what the driver
// answers when the emulated GPU under one of its devices reports Xid.
type faultResponse struct {
	xid    uint64
	health string
	// taint is the taint effect, "" for none.
	taint string
}

// parseFaultResponses parses "<xid>=<health>[/<taint>]" entries, the form
// declaration.FormatFaultResponse writes; an error names each bad entry.
func parseFaultResponses(entries []string) ([]faultResponse, error) {
	var (
		out  []faultResponse
		errs []error
		seen = map[uint64]bool{}
	)
	for _, e := range entries {
		xid, answer, ok := strings.Cut(e, "=")
		n, err := strconv.ParseUint(xid, 10, 64)
		if !ok || err != nil || n == 0 {
			errs = append(errs, fmt.Errorf("%q: want <xid>=<health>[/<taint effect>] with an Xid above 0, e.g. 48=Unhealthy/NoExecute", e))
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
		if seen[n] {
			errs = append(errs, fmt.Errorf("%q: Xid %d answered twice", e, n))
			continue
		}
		seen[n] = true
		out = append(out, faultResponse{xid: n, health: health, taint: taint})
	}
	return out, errors.Join(errs...)
}
