// Package features holds drakit's conformance specification: Gherkin
// features grouped by KEP, one directory per KEP named kep-<number>-<topic>,
// every scenario tagged @kep-<number>, and topic directories for hardware
// that spans KEPs (tpu-torus: chips of a 3D torus and multi-host
// sub-slices), every scenario tagged @<topic> and with the one
// @kep-<number> it is judged under; each scenario with exactly one of @core (the
// KEP's required contract) and @extended (optional behaviour: a capability,
// observer or convention the driver may lack, or access the kit may lack),
// which conformance profiles judge (drakit.dev/drakit/conformance/report).
// The conformance runner (drakit.dev/drakit/conformance) reads them from FS;
// this package exists because go:embed cannot reach a parent directory.
//
// Writing features: steps are defined in conformance/steps_*.go, one file per
// domain noun (claims, pods, devices, slices, cluster, CDI). CEL selectors in
// claims use optional chaining (local-cluster.md §13). A scenario that needs
// something the cluster or driver may not offer starts with a Given step that
// checks it and skips the scenario with the reason; skipped scenarios are
// reported as skipped, never as passed.
package features

import "embed"

// FS holds every feature file, at paths like
// kep-4381-structured-parameters/allocation.feature.
//
//go:embed kep-*/*.feature tpu-torus/*.feature
var FS embed.FS
