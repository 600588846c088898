// Package ginkgo registers drakit's conformance features as specs of a
// Ginkgo v2 suite (github.com/onsi/ginkgo/v2), for a driver author who
// runs the kit from an existing Ginkgo suite instead of `drakit
// conformance`.
//
// Register, called while the suite's tree is built (a package-level var _ =
// ...), adds one container, "drakit conformance", with one Describe per
// feature and one It per scenario (one per example row of a Scenario
// Outline), named after the scenario. Each It carries the scenario's tags
// as Ginkgo labels without the "@" (kep-4815, core, extended, emulator,
// DRAPartitionableDevicesType, …; tags that are not valid labels are left
// out), "profile:<name>" for the conformance profile that judges it
// (drakit.dev/drakit/conformance/report), and "drakit"; its code location
// is the scenario's line in features/<dir>/<file>.feature. So
//
//	go test ./e2e -args --ginkgo.label-filter='kep-4815 && core'
//	go test ./e2e -args --ginkgo.label-filter='profile:partitionable'
//	go test ./e2e -args --ginkgo.focus-file=kep-4816
//
// run the Core scenarios of KEP-4815, a profile's scenarios, the scenarios
// of KEP-4816's feature files. Scenario order is the kit's (feature files
// by path, scenarios by line); the kit's tag filter, profile, concurrency
// and shuffling (Config.Tags, Profile, Concurrency, Randomize) do not
// apply: Ginkgo selects the scenarios.
//
// Every It runs its one scenario with the same step definitions, hooks,
// device leases, cleanup and diagnostics as `drakit conformance`
// (conformance.Session). A scenario that fails fails its spec with the
// failed step's finding and the path of its diagnostics file; a scenario
// the kit skips (a capability the driver does not claim, access the kit
// lacks) is skipped with the kit's reason, never passed, and fails instead
// with Config.FailOnSkip; undefined and pending steps fail. The kit's
// progress output and logs go to GinkgoWriter, shown for failed specs or
// with --ginkgo.v.
//
// The container is Ordered (its scenarios run in one process, one at a
// time, and a failure does not stop the next: ContinueOnFailure) and
// Serial (with ginkgo -p it runs after the parallel specs, alone, since
// scenarios take the node's devices). Its BeforeAll calls the config
// function given to Register, after flags are parsed, and opens the
// session; a config or cluster error fails the first selected spec. Its
// AfterAll writes the kit's reports over the scenarios that ran (junit.xml,
// cucumber.json, summary.txt, conformance-report.yaml) to
// Config.ArtifactsDir, or to a new temporary directory when that is empty,
// and names the directory in a report entry.
//
// Flags binds the kit's settings to flags named drakit.<the drakit
// conformance flag> on a flag set, the driver's (a declaration file and the
// flags that write its fields) included, with the
// command's environment defaults ($DRAKIT_KUBECONFIG, $DRAKIT_CDI_DIR,
// $DRAKIT_EMULATOR_ROOT, $DRAKIT_KUBELET_ROOT_DIR, $ARTIFACTS). The suite
// in ./example runs the kit against drakit's local cluster.
package ginkgo
