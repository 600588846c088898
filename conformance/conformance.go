package conformance

import (
	"context"

	"drakit.dev/drakit/conformance/kit"
)

// The kit's configuration and results, under the names callers use.
type (
	Config   = kit.Config
	Timeouts = kit.Timeouts
	Result   = kit.Result
	Verdict  = kit.Verdict
	Session  = kit.Session
)

// CucumberFile is the name of godog's report in the artifacts directory.
const CucumberFile = kit.CucumberFile

// ErrNoScenarios is Run's error when the tag filter selects no scenario.
var ErrNoScenarios = kit.ErrNoScenarios

// DefaultConfig is the kit's configuration before any driver is named.
func DefaultConfig() Config { return kit.DefaultConfig() }

// Run runs the selected scenarios against the cluster and driver of cfg and
// writes the reports; the verdict is the run's outcome.
func Run(ctx context.Context, cfg Config) (Verdict, error) { return kit.Run(ctx, cfg, Steps...) }

// Open prepares a run whose scenarios the caller runs one at a time.
func Open(ctx context.Context, cfg Config) (*Session, error) { return kit.Open(ctx, cfg, Steps...) }
