// Package report turns the cucumber report of a conformance run
// (github.com/cucumber/godog's cucumber formatter) into the kit's results
// and writes them: junit.xml, which counts a skipped scenario as skipped
// (godog's own junit formatter has no <skipped> element and counts skips as
// passes), and the human summary per KEP tag.
//
// ParseCucumberJSON derives each scenario's outcome from its steps and
// reads two attachments: the skip reason (SkipReasonAttachment) of a skipped
// step and the diagnostics file (DiagnosticsDir/<file>) of a failed
// scenario. Skipped scenarios are never counted as passed.
//
// The package imports nothing of the conformance package, which imports it.
package report
