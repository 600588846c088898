package kit

import (
	"errors"
	"fmt"
	"testing"
)

// Only errors that are the kit's alone spare the driver: one of the
// driver's beside them is a finding still.
func TestOnlyKitFailures(t *testing.T) {
	t.Parallel()
	kit, driver := KitFailure(errors.New("fault command failed")), errors.New("device tainted")
	tests := map[string]struct {
		Err  error
		want bool
	}{
		"nil":              {nil, false},
		"kit":              {kit, true},
		"wrapped":          {fmt.Errorf("inject: %w", kit), true},
		"joined kit":       {errors.Join(kit, fmt.Errorf("reset: %w", kit)), true},
		"driver":           {driver, false},
		"joined mixed":     {fmt.Errorf("clean up: %w", errors.Join(kit, driver)), false},
		"not wrapped (%v)": {fmt.Errorf("inject: %v", kit), false},
	}
	for name, tc := range tests {
		if got := OnlyKitFailures(tc.Err); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}
