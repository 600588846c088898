package features_test

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"

	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

// notInCore are the tags of scenarios that need what not every conformant
// driver or cluster has; a Core scenario must run against any correct
// driver on any cluster of the Kubernetes version, so none carries them.
var notInCore = map[string]string{
	"@emulator":        "needs drakit's hardware emulator on the node",
	"@hardware-faults": "breaks the hardware under a device through the driver's fault command: what a fault means is the vendor's",
	"@nvlink-fabric":   "needs NVML's NVLink fabric state and IMEX channels: NVIDIA's hardware",
	"@tpu-torus":       "needs the emulator's TPU torus as ground truth",
	"@interpose":       "needs the driver redeployed behind drakit interpose",
	"@inventory":       "reads the node's sysfs: node internals the kit may not reach",
	"@pci-topology":    "reads the node's PCI functions in sysfs: node internals the kit may not reach",
	"@pre-created":     "needs partitions created before the driver starts, a MIG-shaped model",
}

// notInCoreSteps are steps that need the same, whatever the scenario's
// tags say.
var notInCoreSteps = map[*regexp.Regexp]string{
	regexp.MustCompile(`^the kit can inject hardware faults`):                           "needs a fault command under the devices and the vendor's meaning of a fault",
	regexp.MustCompile(`NVML state lock`):                                               "needs drakit's hardware emulator on the node",
	regexp.MustCompile(`^the driver declares (an NVLink fabric|IMEX channels)`):         "needs NVIDIA's NVLink fabric",
	regexp.MustCompile(`^the driver declares a torus`):                                  "needs the emulator's TPU torus",
	regexp.MustCompile(`^the driver is behind the kit's interposer`):                    "needs the driver redeployed behind drakit interpose",
	regexp.MustCompile(`sysfs|PCI functions of the node|PCIe root complex of the node`): "reads the node's sysfs: node internals the kit may not reach",
	regexp.MustCompile(`pre-created partition`):                                         "needs partitions created before the driver starts, a MIG-shaped model",
}

// featureGates are the feature gates of Kubernetes 1.37 that a scenario
// may need, with their stage (dra-1.37-spec.md §0.4): those off by
// default, and the beta ones a cluster may turn off (ResourceHealthStatus:
// no gate, no allocatedResourcesStatus). An @needs-gate- tag names one of
// them, and a Core scenario none that is alpha.
var featureGates = map[string]string{
	"ResourceHealthStatus":         "beta",
	"DRAPartitionableDevicesType":  "alpha",
	"DRADeviceCompatibilityGroups": "alpha",
	"DRAListTypeAttributes":        "alpha",
	"DRANodeAllocatableResources":  "alpha",
	"DRAResourcePoolStatus":        "alpha",
	"DRAOptionalNodeOperations":    "alpha",
	"DRADerivedAttributes":         "alpha",
	"DRAWorkloadResourceClaims":    "beta",
	"GenericWorkload":              "beta",
}

// gateSteps are steps that find out whether the cluster has a gate or an
// API version on: a scenario with one states the need by tag, so that the
// kit can tell before it runs.
var gateSteps = map[*regexp.Regexp][]string{
	regexp.MustCompile(`^the API server keeps list-type device attributes$`):                          {"@needs-gate-DRAListTypeAttributes"},
	regexp.MustCompile(`^the API server keeps derived attributes in ResourceClaims$`):                 {"@needs-gate-DRADerivedAttributes"},
	regexp.MustCompile(`^the API server keeps the ResourceSlice field "partitionTypeAttribute"$`):     {"@needs-gate-DRAPartitionableDevicesType"},
	regexp.MustCompile(`^the API server keeps the ResourceSlice field "compatibilityGroups"$`):        {"@needs-gate-DRADeviceCompatibilityGroups"},
	regexp.MustCompile(`^the API server keeps the ResourceSlice field "skipNodeOperations"$`):         {"@needs-gate-DRAOptionalNodeOperations"},
	regexp.MustCompile(`^the API server serves ResourcePoolStatusRequests$`):                          {"@needs-gate-DRAResourcePoolStatus", "@needs-api-v1alpha3.resource.k8s.io"},
	regexp.MustCompile(`^the cluster serves PodGroups with resource claims$`):                         {"@needs-gate-GenericWorkload", "@needs-gate-DRAWorkloadResourceClaims", "@needs-api-v1beta1.scheduling.k8s.io"},
	regexp.MustCompile(`^a ResourceSlice "[^"]+" of the test driver with a device whose nodeAllocat`): {"@needs-gate-DRANodeAllocatableResources"},
}

// driverSteps judge the driver's own work: a scenario with one checks the
// driver, whatever else it checks, and is no @cluster-check.
var driverSteps = []*regexp.Regexp{
	regexp.MustCompile(`sees exactly the .*devices? allocated`),
	regexp.MustCompile(`^the driver's ResourceSlices pass the lint rule`),
	regexp.MustCompile(`^the driver reports the status of`),
	regexp.MustCompile(`^the driver('s registration socket| registers)`),
}

// TestCoreNeedsNoMore walks every feature file: no Core scenario carries a
// tag of notInCore, has a step of notInCoreSteps, or needs an alpha feature gate (its @needs-gate- tag, or
// the gate tag a profile keys on) or an alpha API version; every
// eligibility tag parses and names a gate of featureGates; a scenario with
// a step of gateSteps carries the tags it implies; and none with a step of
// driverSteps is a @cluster-check.
func TestCoreNeedsNoMore(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(features.FS, "*/*.feature")
	if err != nil {
		t.Fatal(err)
	}
	scenarios, core, cluster, coreCluster := 0, 0, 0, 0
	for _, file := range files {
		data, err := features.FS.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ids := &messages.Incrementing{}
		doc, err := gherkin.ParseGherkinDocument(strings.NewReader(string(data)), ids.NewId)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, p := range gherkin.Pickles(*doc, file, ids.NewId) {
			scenarios++
			var tags []string
			for _, tag := range p.Tags {
				tags = append(tags, tag.Name)
			}
			isCore := slices.Contains(tags, report.CoreTag)
			if isCore {
				core++
			}
			if slices.Contains(tags, report.ClusterCheckTag) {
				cluster++
				if isCore {
					coreCluster++
				}
			}
			needs, err := report.ParseNeeds(tags)
			if err != nil {
				t.Errorf("%s: scenario %q: %v", file, p.Name, err)
			}
			for _, g := range needs.Gates {
				stage, known := featureGates[g]
				switch {
				case !known:
					t.Errorf("%s: scenario %q needs feature gate %s, which is not a gate of 1.37 a scenario may need", file, p.Name, g)
				case isCore && stage == "alpha":
					t.Errorf("%s: Core scenario %q needs the alpha feature gate %s: make it @extended", file, p.Name, g)
				}
			}
			for _, tag := range tags {
				if reason, ok := notInCore[tag]; ok && isCore {
					t.Errorf("%s: Core scenario %q is %s, which %s: make it @extended", file, p.Name, tag, reason)
				}
				if stage := featureGates[strings.TrimPrefix(tag, "@")]; isCore && stage == "alpha" {
					t.Errorf("%s: Core scenario %q is %s, an alpha feature gate's: make it @extended", file, p.Name, tag)
				}
			}
			for _, api := range needs.APIs {
				if isCore && strings.Contains(api, "alpha") {
					t.Errorf("%s: Core scenario %q needs the alpha API %s: make it @extended", file, p.Name, api)
				}
			}
			for _, st := range p.Steps {
				for re, reason := range notInCoreSteps {
					if isCore && re.MatchString(st.Text) {
						t.Errorf("%s: Core scenario %q has the step %q, which %s: make it @extended", file, p.Name, st.Text, reason)
					}
				}
				for re, want := range gateSteps {
					if !re.MatchString(st.Text) {
						continue
					}
					for _, w := range want {
						if !slices.Contains(tags, w) {
							t.Errorf("%s: scenario %q has the step %q, but not the tag %s", file, p.Name, st.Text, w)
						}
					}
				}
				for _, re := range driverSteps {
					if re.MatchString(st.Text) && slices.Contains(tags, report.ClusterCheckTag) {
						t.Errorf("%s: scenario %q is a %s, but its step %q checks the driver", file, p.Name, report.ClusterCheckTag, st.Text)
					}
				}
			}
		}
	}
	t.Logf("%d scenarios, %d Core; %d cluster checks, %d of them Core", scenarios, core, cluster, coreCluster)
}
