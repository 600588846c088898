// Package slicelint holds the steps that judge the driver's ResourceSlices
// with the rules of drakit.dev/drakit/conformance/lint (features'
// slices.feature files): a rule that a KEP or the API requires fails the
// driver; advice that none requires is a warning the verdict never counts.
package slicelint
