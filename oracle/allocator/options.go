package allocator

import (
	"errors"
	"fmt"
)

// Mode selects which of the valid allocations Allocate returns.
type Mode int

const (
	// ModeFirstFit returns the allocation upstream's first-fit search
	// returns: the first complete solution in upstream's search order
	// (claims, requests, firstAvailable alternatives, devices in published
	// order). Deterministic.
	ModeFirstFit Mode = iota
	// ModePacking prefers, among the valid allocations, one that keeps the
	// most capacity usable for later claims: partitions are packed onto
	// counter sets that are already in use, and devices that share topology
	// attribute values with devices of another kind (the only partners of
	// scarce devices) are spent last. Deterministic.
	ModePacking
)

// String returns the flag spelling of the mode.
func (m Mode) String() string {
	switch m {
	case ModeFirstFit:
		return "first-fit"
	case ModePacking:
		return "packing"
	default:
		return fmt.Sprintf("Mode(%d)", int(m))
	}
}

// ParseMode parses the flag spelling of a mode ("first-fit" or "packing").
func ParseMode(s string) (Mode, error) {
	switch s {
	case "first-fit", "firstfit", "":
		return ModeFirstFit, nil
	case "packing":
		return ModePacking, nil
	default:
		return 0, fmt.Errorf("parse mode %q: must be first-fit or packing", s)
	}
}

// ErrStepBudget is wrapped by the error Allocate returns when the search
// used up Options.StepBudget steps without reaching a decision.
var ErrStepBudget = errors.New("allocation step budget exhausted")

// Options tune the reference allocator. The zero value is valid and equals
// DefaultOptions().
type Options struct {
	// Mode selects first-fit (default, upstream's choice) or packing.
	Mode Mode
	// StepBudget bounds the search steps of one Allocate call (one step
	// is one attempt to place one device). 0 means no bound. When the
	// budget is used up, Allocate returns an error wrapping ErrStepBudget.
	StepBudget int
}

// DefaultOptions returns first-fit mode without a step budget.
func DefaultOptions() Options {
	return Options{Mode: ModeFirstFit}
}

// Validate reports invalid option values, naming the field.
func (o Options) Validate() error {
	var errs []error
	if o.Mode != ModeFirstFit && o.Mode != ModePacking {
		errs = append(errs, fmt.Errorf("validate options: mode: unknown value %d", int(o.Mode)))
	}
	if o.StepBudget < 0 {
		errs = append(errs, fmt.Errorf("validate options: stepBudget: must be >= 0, got %d", o.StepBudget))
	}
	return errors.Join(errs...)
}
