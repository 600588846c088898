package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/conformance/report"
)

// ExitError ends drakit with its code. A verdict's (Bare) is printed as
// it is: the line the summary above it ends with.
type ExitError struct {
	Code int
	Err  error
	Bare bool
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// UsageError is a usage error's: bad flags or arguments, input that does
// not load or validate (report.ExitUsage).
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: report.ExitUsage, Err: err}
}

// UsageArgs makes the errors of an argument check usage errors.
func UsageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error { return UsageError(check(cmd, args)) }
}

// ExitCode is the exit code of err and the message to print: 0 for none,
// an ExitError's, or 1 for any other error.
func ExitCode(err error) (int, string) {
	var e *ExitError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &e) && e.Bare:
		return e.Code, e.Error()
	case errors.As(err, &e):
		return e.Code, "drakit: " + e.Error()
	}
	return 1, "drakit: " + err.Error()
}
