package kit

import (
	"context"

	"github.com/cucumber/godog"

	"drakit.dev/drakit/conformance/report"
)

// kitError is a failure of the kit, or of what it was given, not of the
// driver: a fault command that failed, a driver the kit could not stop. A
// scenario whose first failed step fails with kit errors alone keeps the
// kit from certifying the driver and is no finding
// (report.KitFailureAttachment).
type kitError struct{ Err error }

func (e *kitError) Error() string { return e.Err.Error() }
func (e *kitError) Unwrap() error { return e.Err }

// kitFailure marks err as the kit's failure.
func KitFailure(err error) error { return &kitError{Err: err} }

// onlyKitFailures says whether err is, through every wrap and join, made
// of kit errors alone: a driver's failure joined to one still counts.
func OnlyKitFailures(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := err.(*kitError); ok {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		errs := u.Unwrap()
		for _, e := range errs {
			if !OnlyKitFailures(e) {
				return false
			}
		}
		return len(errs) > 0
	case interface{ Unwrap() error }:
		return OnlyKitFailures(u.Unwrap())
	}
	return false
}

// markKitFailure attaches report.KitFailureAttachment when err is the
// kit's failure alone, so that the verdict does not hold it against the
// driver.
func markKitFailure(ctx context.Context, err error) context.Context {
	if !OnlyKitFailures(err) {
		return ctx
	}
	return godog.Attach(ctx, godog.Attachment{FileName: report.KitFailureAttachment, MediaType: "text/plain", Body: []byte(err.Error())})
}
