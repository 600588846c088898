// Package report turns the cucumber report of a conformance run
// (github.com/cucumber/godog's cucumber formatter) into the kit's results
// and writes them: junit.xml, which counts a skipped scenario as skipped
// (godog's own junit formatter has no <skipped> element and counts skips as
// passes), the human summary per KEP tag, and conformance-report.yaml, the
// verdict per conformance profile and of the run (Judge).
//
// ParseCucumberJSON derives each scenario's outcome from its steps and
// reads five attachments: the skip reason (SkipReasonAttachment) of a
// skipped step, the diagnostics file (DiagnosticsDir/<file>) of a failed
// scenario, the capabilities the driver claims that the scenario needs
// (ClaimedCapabilityAttachment), warnings (WarningAttachment): advice
// that no KEP or API requires, which the summary and the report list
// apart and the verdict never counts, and the mark of a first failed step
// that failed through the kit, not the driver (KitFailureAttachment).
// Skipped scenarios are never counted as passed.
//
// # Conformance levels and profiles
//
// Every scenario carries, next to its @kep-<number> tag, exactly one of
// @core (CoreTag: the KEP's required contract, which every driver
// conformant to it implements) and @extended (ExtendedTag: optional
// behaviour — a capability the driver may leave unclaimed, a convention of
// its own, or a check that needs access the kit may lack, such as the
// node's CDI directory, drakit's emulator or the driver's pods). A
// scenario without either is held to Core.
//
// Profiles group KEPs, as Gateway API's conformance profiles group
// features; a scenario is a profile's when one of its @kep-<number> tags is
// one of the profile's KEPs, whatever its level, unless it also carries the
// tag of a profile's feature gate (@DRAPartitionableDevicesType, an alpha
// sub-feature of KEP-4815): then it is that profile's:
//
//	core                 KEP-4381 structured parameters (GA): every DRA driver
//	prioritized-list     KEP-4816 prioritized lists (GA): every DRA driver
//	admin-access         KEP-5018 admin access (GA): drivers that claim adminAccess
//	extended-resources   KEP-5004 extended resources backed by DRA (beta): every DRA driver
//	partitionable        KEP-4815 partitionable devices (beta): drivers with shared counters
//	consumable-capacity  KEP-5075 consumable capacity (beta): drivers with shared devices
//	device-status        KEP-4817 device status (beta): drivers that report it
//	device-taints        KEP-5055 device taints and DeviceTaintRules (beta)
//	device-health        KEP-4680 device health in pod status (beta)
//	device-metadata      KEP-5304 device metadata files (beta): drivers that write them
//	workload-claims      KEP-5729 ResourceClaims of PodGroups (beta)
//	pool-status          KEP-5677 ResourcePoolStatusRequests (alpha): every DRA driver
//	binding-conditions   KEP-5007 device binding conditions (beta): the scheduler waits for an attach controller
//	node-allocatable     KEP-5517 node allocatable resources (alpha): drivers of cpu and memory
//	numa-node            KEP-6072 the standard numaNode attribute (GA)
//	pod-resources        KEP-3695 the kubelet's PodResources API for DRA (GA): every DRA driver
//	alpha                partition types (@DRAPartitionableDevicesType of KEP-4815),
//	                     KEP-5963 compatibility groups, KEP-5945 optional node operations,
//	                     KEP-5491 list-type and KEP-6080 derived attributes (alpha gates)
//
// ProfileNames lists them, ValidateProfile checks a name and Filter turns a
// profile and a godog tag filter into the tag filter of a run of that
// profile (drakit conformance --profile).
//
// # The verdict
//
// Judge judges a run once, over the scenarios it selected; WriteSummary
// ends with its line (Verdict.Line), WriteConformanceReport writes it, and
// drakit conformance exits with its code (ExitConformant 0, ExitNotConformant
// 1, ExitCouldNotCertify 3; ExitUsage 2 is for usage errors). A skip is
// exempt when its reason says the scenario does not apply to the driver
// (UnclaimedSkip: "capability " followed by a known Capability's String and
// " unclaimed", or NotDeclaredPrefix) or that the cluster cannot run it
// (NotEligiblePrefix). Scenarios tagged ClusterCheckTag check the cluster,
// not the driver: they are counted and listed apart and never make a
// profile's verdict. Per profile, over the driver's scenarios:
//
//   - Not conformant: a scenario failed, not through the kit, or one that needs a capability the
//     driver claims (ScenarioResult.Claimed, from ClaimedCapabilityAttachment)
//     was skipped other than as exempt — each a finding;
//   - else Could not certify: a step was undefined or pending (the kit's
//     defect, never the driver's), a scenario failed through the kit
//     (ScenarioResult.KitFailure: a fault command that failed, a driver it
//     could not stop), a Core scenario was skipped other than as exempt, or
//     with Result.SkipsFail (--fail-on-skip) an Extended one;
//   - else Conformant when one passed;
//   - else Not eligible when one was not eligible, and Not applicable
//     otherwise: no scenario exercised the driver (they do not apply to it,
//     only cluster checks ran, or only Extended ones that could not run).
//
// A skipped Core scenario that is not exempt never yields Conformant. The
// run is Not conformant with any finding; else Could not certify when a
// profile could not be certified, a cluster check failed, was undefined or
// pending (or, with SkipsFail, skipped other than as exempt), no scenario of
// the driver passed, or none ran; else Conformant. Scenarios the tag
// filter left out are not judged; the report lists them as not run.
//
// The kit's steps skip as unclaimed for capabilities the driver's
// declaration leaves unclaimed (conformance.Config.Capabilities), and fail
// instead when the driver's slices show the capability.
//
// # conformance-report.yaml
//
// WriteConformanceReport writes a versioned document (APIVersion, Kind);
// its keys come out sorted, as sigs.k8s.io/yaml writes them (a profile's
// result line comes right after its name line, which scripts rely on; the
// example below is ordered for reading). What the
// runner cannot tell (Input) it says is "unknown". Profiles of which no
// scenario ran are left out; scenarios of no profile that did not pass are
// listed under unprofiled.
//
//	apiVersion: conformance.drakit.dev/v1alpha1
//	kind: ConformanceReport
//	date: "2026-07-01T12:00:00Z"
//	kitVersion: v0.0.0-20260701115900-0123456789ab   # build info of the binary
//	kubernetes:
//	  version: v1.37.2
//	  enabledFeatureGates: unknown                   # or a list
//	driver:
//	  name: gpu.drakit.dev
//	  version: unknown
//	  deviceKinds:
//	  - {name: devices, deviceClass: gpu.drakit.dev}
//	  - {name: partitions, deviceClass: mig.gpu.drakit.dev}
//	run: {profile: all, tags: ~@emulator, hardware: real, seed: 42}
//	profiles:
//	- name: core
//	  result: conformant     # right after name: conformant, not-conformant, could-not-certify, not-applicable, not-eligible
//	  description: 'structured parameters (KEP-4381, GA): what every DRA driver does'
//	  core: {passed: 9, failed: 0, skipped: 0, notEligible: 0}
//	  extended: {passed: 3, failed: 0, skipped: 2, notEligible: 0}
//	  clusterChecks: {passed: 4, failed: 0, skipped: 0, notEligible: 0}
//	  # findings and couldNotCertify: name, location, conformance, message (diagnostics)
//	  keps:
//	  - kep: 4381
//	    core: {passed: 9, failed: 0, skipped: 0, notEligible: 0}
//	    extended: {passed: 3, failed: 0, skipped: 2, notEligible: 0}
//	    skipped:
//	    - name: Deleting a pod removes its claim's CDI spec from the node
//	      location: kep-4381-structured-parameters/deallocation.feature:34
//	      conformance: extended
//	      reason: 'the kit cannot see the node''s file system: ...'
//	    # and failed, when some did: name, location, conformance, status, error, diagnostics
//	clusterChecks: {passed: [...], failed: [...], skipped: [...]}
//	verdict:
//	  result: conformant     # the run's: conformant, not-conformant, could-not-certify
//	  driverChecks: {passed: 12, failed: 0, skipped: 2, notEligible: 0}
//	  clusterChecks: {passed: 4, failed: 0, skipped: 0, notEligible: 0}
//	  # findings, couldNotCertify: every profile's and the run's
//	warnings:                # advice no KEP or API requires, not counted in the verdict
//	- name: The driver's slices for a node name a Node of the cluster
//	  location: kep-4381-structured-parameters/slices.feature:30
//	  conformance: core
//	  message: 'rule node-selection (no KEP or API basis, a warning: ...): ...'
//
// The package imports nothing of the conformance package, which imports it.
package report
