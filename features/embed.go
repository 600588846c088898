// Package features holds drakit's conformance specification: Gherkin
// features grouped by KEP, one directory per KEP named kep-<number>-<topic>,
// every scenario tagged @kep-<number>, and topic directories for hardware
// that spans KEPs (tpu-torus: chips of a 3D torus and multi-host
// sub-slices), every scenario tagged @<topic> and with the one
// @kep-<number> it is judged under; each scenario with exactly one of @core (the
// KEP's required contract) and @extended (optional behaviour: a capability,
// observer or convention the driver may lack, or access the kit may lack),
// which conformance profiles judge (drakit.dev/drakit/conformance/report).
// A Core scenario runs against every correct driver on every cluster of the
// Kubernetes version: it needs no alpha feature gate, nor drakit's emulator,
// a vendor's hardware or the node's internals (core_test.go lists the tags
// and steps that say so). Tags of sub-features that only some drivers have
// put their scenarios in profiles of their own (@nvlink-fabric,
// @tpu-torus, @pci-topology, @hardware-faults). A scenario that checks the
// API server, the scheduler, a controller or the kubelet rather than the
// driver (the kit's own test devices, objects it submits, pods that never
// use the driver's devices) is tagged @cluster-check; one that exercises the
// driver at all (its slices, a pod running with its devices, what the
// container sees) is not. A scenario that needs a feature gate that is off
// by default, or a beta one a cluster may turn off, says so with
// @needs-gate-<gate>
// (@needs-gate-DRAListTypeAttributes), one that needs an API version the
// API server does not serve by default with @needs-api-<version>.<group>,
// its APIService's name (@needs-api-v1alpha3.resource.k8s.io), on the
// scenario or its Feature:
// the kit skips it, before its steps, as not eligible on a cluster that
// lacks it (report.ParseNeeds).
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
