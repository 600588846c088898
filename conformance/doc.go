// Package conformance is drakit's conformance kit: it runs the Gherkin
// features of drakit.dev/drakit/features with godog against a cluster and a
// DRA driver, and reports per KEP which behaviours hold.
//
// What conformance means here: for every scenario the kit compares two
// sources of truth and never trusts the driver's own account. One is what
// the API server stored (a claim's status.allocation, the allocated devices'
// entries in the driver's ResourceSlices, reservedFor, pod conditions,
// validation errors with their field paths). The other is what a container
// actually sees, reported by drakit-probe from inside the pod
// (drakit.dev/drakit/conformance/probe): GPU device nodes (major 195), the
// GPUs NVML enumerates with their UUIDs, and the environment. A device is
// identified across the two by its UUID attribute (Config.UUIDAttribute).
//
// Running: Run(ctx, cfg) with cfg from DefaultConfig and a Kubeconfig. It
// first checks that the API server answers and serves resource.k8s.io/v1,
// and fails fast with a clear error otherwise. Scenarios run with godog in
// strict mode (undefined or pending steps fail). Each scenario gets its own
// namespace (generateName "drakit-") and a cleanup ledger: everything it
// creates is deleted afterwards, even when it failed, and the kit waits for
// its pods and claims to be gone so that the next scenario finds the devices
// free. When a scenario fails, its claims, templates, pods, events, probe
// reports, the driver's ResourceSlices and the driver pods' log tails are
// written to ArtifactsDir/diagnostics/<scenario>.txt and attached to the
// report.
//
// Capabilities: a scenario that needs something the cluster or driver may
// lack (two GPUs on one NUMA node, a readable node CDI directory, a
// per-device environment convention) starts with a Given step that checks
// it and otherwise skips the scenario, recording the reason. Skipped
// scenarios are reported as skipped, never as passed.
//
// Reports in ArtifactsDir: cucumber.json (godog's formatter); junit.xml,
// which the kit derives from the cucumber report because godog's junit
// formatter has no <skipped> element; and summary.txt with the outcome per
// KEP tag (@kep-4381, …), which Run also prints after godog's progress
// output. Run returns the Result; scenario failures are in
// the Result, the error is only for runs that could not take place.
//
// Steps live in steps_<noun>.go, one file per domain noun, as methods of
// the world (world.go): initScenario creates one world per scenario and
// binds that scenario's steps and hooks to it, so scenario state is never
// in globals. Steps gather both sources of truth (the API server's objects,
// the probe's report, the node's CDI specs and the kubelet's DRA
// checkpoint); the comparisons of what a container saw with what was
// allocated are pure functions in drakit.dev/drakit/conformance/observe,
// whose findings the steps turn into their errors.
package conformance
