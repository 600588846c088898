// Package kit is the scenario core of drakit's conformance kit: it runs the Gherkin
// features of drakit.dev/drakit/features with godog against a cluster and
// any DRA driver, and reports per KEP and per conformance profile which
// behaviours hold.
//
// What conformance means here: for every scenario the kit compares sources
// of truth and never trusts the driver's own account. One is what the API
// server stored (a claim's status.allocation, the allocated devices' entries
// in the driver's ResourceSlices, reservedFor, pod conditions, validation
// errors with their field paths). The others are on the node: what the
// kubelet recorded of the driver's NodePrepareResources (its DRA
// checkpoint), the CDI specs the runtime applies, and what a container
// actually sees, reported by drakit-probe from inside the pod
// (drakit.dev/drakit/conformance/probe): device nodes, mounts, environment,
// and the GPUs and MIG devices NVML enumerates. Every driver is held to the
// DRA contract (the container shows exactly the CDI edits the driver
// prepared for the allocated devices); the observers a driver declares add
// device-kind ground truth (its per-device variables, NVML). A device is
// identified across the sources by its identity attribute
// (the declaration's identity attribute).
//
// Configuration: Config holds the kit's own settings; everything about the
// driver is its declaration (Config.Declaration, drakit.dev/drakit/
// conformance/declaration, whose flags write its fields), which the
// scenarios read as DriverSettings; DefaultConfig says nothing about any
// driver.
//
// Running: Run(ctx, cfg) with cfg from DefaultConfig, a Kubeconfig and a
// driver. It first checks that the API server answers and serves
// resource.k8s.io/v1, and fails fast with a clear error otherwise. Scenarios
// run with godog in strict mode (undefined or pending steps fail),
// Config.Concurrency at a time. Each scenario gets its own namespace
// (generateName "drakit-"), a lease on the driver's devices its steps need
// (drakit.dev/drakit/conformance/inventory; its claims are kept on them)
// and a cleanup ledger: everything it creates (PodGroups and Workloads of
// KEP-5729 after their pods) is deleted afterwards, even when it failed, and the kit waits for its pods and claims to be gone
// before it gives the devices back. The DeviceTaintRules a scenario
// creates (KEP-5055) are cluster-scoped: cleanup waits until they are gone
// before the devices go back, and a run starts by deleting every rule
// labelled as the kit's, left by a run that was killed. When a scenario
// fails, its claims, templates, pods, events, probe reports, the driver's ResourceSlices and
// the driver pods' log tails are written to
// ArtifactsDir/diagnostics/<scenario>.txt and attached to the report.
//
// Running one scenario at a time: Open(ctx, cfg) returns a Session that
// has done what Run does before its first scenario; Session.RunScenario
// runs one scenario, by its feature file and line (an example row's for
// one row of a Scenario Outline), with the same steps, hooks and leases;
// Session.Close writes the reports over the scenarios that ran. A test
// framework that selects and orders the scenarios itself drives the kit so
// (drakit.dev/drakit/conformance/ginkgo, one Ginkgo spec per scenario).
//
// Skips: a scenario that needs something the cluster, the kit or the
// driver may lack (two devices on one NUMA node, a readable node CDI
// directory, a capability the driver does not claim) checks it in a step
// and otherwise skips, recording the reason; an unclaimed capability that
// the driver's slices show anyway fails instead. Skipped scenarios are
// reported as skipped, never as passed.
//
// Reports in ArtifactsDir: cucumber.json (godog's formatter); junit.xml,
// which the kit derives from the cucumber report because godog's junit
// formatter has no <skipped> element; summary.txt with the outcome per KEP
// tag (@kep-4381, …), which Run also prints after godog's output; and
// conformance-report.yaml with the result per profile
// (drakit.dev/drakit/conformance/report). Run returns the Result; scenario
// failures are in the Result, the error is only for runs that could not
// take place.
//
// Steps live in steps_<noun>.go, one file per domain noun, as methods of
// the world (world.go): initScenario creates one world per scenario and
// binds that scenario's steps and hooks to it, so scenario state is never
// in globals. Steps gather the sources of truth; the comparisons of what a
// container saw with what was allocated are pure functions in
// drakit.dev/drakit/conformance/observe, whose findings the steps turn into
// their errors.
package kit
