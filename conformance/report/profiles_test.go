package report

import (
	"bytes"
	"io/fs"
	"slices"
	"strings"
	"testing"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"

	"drakit.dev/drakit/features"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		profile, tags, want string
	}{
		{"", "", ""},
		{"", "@kep-4381 && ~@slow", "@kep-4381 && ~@slow"},
		{"alpha", "", "@kep-5963,@kep-5945,@kep-5491,@kep-6080,@kep-4815 && @DRAPartitionableDevicesType"},
		{"pool-status", "", "@kep-5677"},
		{"core", "", "@kep-4381 && ~@nvlink-fabric && ~@pci-topology"},
		{"partitionable", "~@emulator", "@kep-4815 && ~@DRAPartitionableDevicesType && ~@tpu-torus && ~@emulator"},
		{"hardware-faults", "", "@kep-4680 && @hardware-faults,@kep-5055 && @hardware-faults"},
		{"alpha", "@core && ~@emulator, @slow", "@kep-5963 && @core && ~@emulator,@kep-5963 && @slow,@kep-5945 && @core && ~@emulator,@kep-5945 && @slow,@kep-5491 && @core && ~@emulator,@kep-5491 && @slow,@kep-6080 && @core && ~@emulator,@kep-6080 && @slow,@kep-4815 && @DRAPartitionableDevicesType && @core && ~@emulator,@kep-4815 && @DRAPartitionableDevicesType && @slow"},
	}
	for _, tc := range tests {
		got, err := Filter(tc.profile, tc.tags)
		if err != nil || got != tc.want {
			t.Errorf("Filter(%q, %q) = %q, %v; want %q", tc.profile, tc.tags, got, err, tc.want)
		}
	}
	if _, err := Filter("gold", ""); err == nil || !strings.Contains(err.Error(), `unknown profile "gold" (known: `+strings.Join(ProfileNames(), ", ")+`)`) {
		t.Errorf("Filter of an unknown profile: %v", err)
	}
}

func TestValidateProfile(t *testing.T) {
	t.Parallel()
	for _, name := range append(ProfileNames(), "") {
		if err := ValidateProfile(name); err != nil {
			t.Errorf("ValidateProfile(%q): %v", name, err)
		}
	}
	err := ValidateProfile("Core")
	if err == nil || err.Error() != `unknown profile "Core" (known: `+strings.Join(ProfileNames(), ", ")+`)` {
		t.Errorf("ValidateProfile(Core) = %v, want an error listing the profiles", err)
	}
}

func TestUnclaimedSkip(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"capability partitionableDevices (KEP-4815) unclaimed":                    true,
		"capability numaNodeAttribute (KEP-6072) unclaimed: no NUMA node promise": true,
		"capability numaNodeAttribute (KEP-4815) unclaimed":                       false, // wrong KEP
		"not declared: the driver declares no partition DeviceClass":              true,
		"capability goldPlating (KEP-1) unclaimed":                                false,
		"the kit cannot see the node's file system":                               false,
		"": false,
	}
	for reason, want := range tests {
		if got := UnclaimedSkip(reason); got != want {
			t.Errorf("UnclaimedSkip(%q) = %t, want %t", reason, got, want)
		}
	}
}

// TestProfilesCoverFeatures: every scenario of the features is in exactly
// one profile, every profile's KEPs and gates have scenarios, and each
// profile but those of alpha features and of hardware only some drivers
// have holds Core scenarios (features/core_test.go keeps those out of
// Core).
func TestProfilesCoverFeatures(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(features.FS, "*/*.feature")
	if err != nil {
		t.Fatal(err)
	}
	// withoutCore are the profiles whose scenarios all need an alpha
	// feature gate, or hardware only some drivers have (the emulator's,
	// NVIDIA's, the node's PCI functions, a vendor's faults), and
	// pod-resources, whose every scenario reads the kubelet's PodResources
	// socket on the node.
	withoutCore := []string{"pool-status", "node-allocatable", "numa-node", "alpha", "hardware-faults", "nvidia-fabric", "tpu-torus", "pci-topology", "pod-resources"}
	kepsSeen := map[int]bool{}
	gatesSeen := map[string]bool{}
	coreOf := map[string]int{}
	for _, file := range files {
		data, err := features.FS.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ids := &messages.Incrementing{}
		doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(data), ids.NewId)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, p := range gherkin.Pickles(*doc, file, ids.NewId) {
			var tags []string
			for _, tag := range p.Tags {
				tags = append(tags, tag.Name)
			}
			var in []string
			for _, pr := range profiles {
				if pr.includes(tags) {
					in = append(in, pr.name)
					if levelOf(tags) == levelCore {
						coreOf[pr.name]++
					}
				}
			}
			if len(in) != 1 {
				t.Errorf("%s: scenario %q is in profiles %v, want exactly one", file, p.Name, in)
			}
			for _, k := range keps(tags) {
				kepsSeen[k] = true
			}
			if g := gateOf(tags); g != "" {
				gatesSeen[g] = true
			}
		}
	}
	for _, pr := range profiles {
		for _, k := range pr.keps {
			if !kepsSeen[k] {
				t.Errorf("profile %s: KEP-%d has no scenarios", pr.name, k)
			}
		}
		for _, g := range pr.gates {
			if !gatesSeen[g.name] {
				t.Errorf("profile %s: gate %s has no scenarios", pr.name, g.name)
			}
		}
		if coreOf[pr.name] == 0 && !slices.Contains(withoutCore, pr.name) {
			t.Errorf("profile %s has no Core scenario", pr.name)
		}
		if coreOf[pr.name] > 0 && slices.Contains(withoutCore, pr.name) {
			t.Errorf("profile %s has %d Core scenarios, want none", pr.name, coreOf[pr.name])
		}
	}
	if names := ProfileNames(); !slices.Equal(names, []string{"core", "prioritized-list", "admin-access", "extended-resources", "partitionable", "consumable-capacity", "device-status", "device-taints", "device-health", "device-metadata", "workload-claims", "pool-status", "binding-conditions", "node-allocatable", "numa-node", "pod-resources", "alpha", "hardware-faults", "nvidia-fabric", "tpu-torus", "pci-topology"}) {
		t.Errorf("ProfileNames() = %v", names)
	}
}

// TestProfileOf: a scenario is judged in its KEP's profile, a scenario with
// a profile gate's tag in the gate's profile.
func TestProfileOf(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tags []string
		want string
		ok   bool
	}{
		"structured parameters": {[]string{"@kep-4381", "@core"}, "core", true},
		"partitionable":         {[]string{"@extended", "@kep-4815"}, "partitionable", true},
		"partition types' gate": {[]string{"@kep-4815", "@DRAPartitionableDevicesType", "@core"}, "alpha", true},
		"NVLink fabric":         {[]string{"@kep-4381", "@extended", "@nvlink-fabric"}, "nvidia-fabric", true},
		"faults of KEP-5055":    {[]string{"@kep-5055", "@extended", "@hardware-faults"}, "hardware-faults", true},
		"a gate of another KEP": {[]string{"@kep-4815", "@hardware-faults"}, "partitionable", true},
		"alpha KEP":             {[]string{"@kep-5963"}, "alpha", true},
		"no KEP":                {[]string{"@core"}, "", false},
		"a KEP of no profile":   {[]string{"@kep-1"}, "", false},
	}
	for name, tc := range tests {
		got, ok := ProfileOf(tc.tags)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: ProfileOf(%q) = %q, %v; want %q, %v", name, tc.tags, got, ok, tc.want, tc.ok)
		}
	}
}

// TestFilterSelectsProfile: the tag filter of each profile selects exactly
// the scenarios of the features that ProfileOf puts in it.
func TestFilterSelectsProfile(t *testing.T) {
	t.Parallel()
	all, err := allScenarios(features.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ProfileNames() {
		filter, err := Filter(name, "")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range all {
			of, _ := ProfileOf(s.Tags)
			if got, want := MatchesTags(filter, s.Tags), of == name; got != want {
				t.Errorf("profile %s: its filter %q selects %s:%d %q: %t; ProfileOf: %s", name, filter, s.URI, s.Line, s.Name, got, of)
			}
			if of == name {
				n++
			}
		}
		if n == 0 {
			t.Errorf("profile %s has no scenarios", name)
		}
	}
}
