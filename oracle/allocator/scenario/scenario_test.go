package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

func TestLoadValid(t *testing.T) {
	files, err := filepath.Glob("testdata/valid-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid testdata: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := Load(file)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			out, err := Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse(out)
			if err != nil {
				t.Fatalf("parse marshalled scenario: %v\n%s", err, out)
			}
			if diff := cmp.Diff(s, again, quantityEqual); diff != "" {
				t.Errorf("round trip changed the scenario (-first +second):\n%s", diff)
			}
			out2, err := Marshal(again)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != string(out2) {
				t.Errorf("Marshal is not stable:\n%s\n---\n%s", out, out2)
			}
		})
	}
}

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func TestLoadInvalid(t *testing.T) {
	tests := map[string][]string{
		"invalid-api-version.yaml":     {`apiVersion: Unsupported value: "allocator.drakit.dev/v2"`},
		"invalid-kind.yaml":            {`kind: Unsupported value: "Pod"`},
		"invalid-unknown-field.yaml":   {`line 53: allocatedClaims[0].spec.devices.requests[0].exactly.cont: Forbidden: unknown field`},
		"invalid-missing-node.yaml":    {"node: Required value"},
		"invalid-duplicate-claim.yaml": {`line 63: claims[0].metadata.name: Duplicate value: "old"`},
		"invalid-missing-class.yaml": {
			`line 71: claims[0].spec.devices.requests[0].firstAvailable[0].deviceClassName: Not found: "tpu.example.com"`,
			`claims[0].spec.devices.requests[0].firstAvailable[1].deviceClassName: Not found`,
		},
		"invalid-cel.yaml":                      {`line 74: claims[0].spec.devices.requests[0].firstAvailable[0].selectors[0].cel.expression: Invalid value`},
		"invalid-wrong-type.yaml":               {`line 28: resourceSlices[0].spec.pool.generation: Invalid value: "one": must be an integer`},
		"invalid-slice-node-selection.yaml":     {`line 23: resourceSlices[0].spec: Invalid value: 2: exactly one of nodeName`},
		"invalid-attribute.yaml":                {`line 33: resourceSlices[0].spec.devices[0].attributes[numa]: Invalid value: 2`},
		"invalid-allocated-without-status.yaml": {`line 44: allocatedClaims[0].status.allocation: Required value`},
		"invalid-duplicate-key.yaml":            {"parse YAML", `"name" already set`},
		"invalid-duplicate-device.yaml":         {`resourceSlices[0].spec.devices[1].name: Duplicate value: "gpu-0"`},
		"invalid-counter-set.yaml":              {`line 27: resourceSlices[1].spec.devices[1].consumesCounters[0].counterSet: Not found: "gpu-9"`, `devices[2].consumesCounters[0].counterSet`},
		"invalid-all-with-count.yaml":           {`claims[0].spec.devices.requests[0].exactly.count: Invalid value: 2: must be unset with allocationMode All`},
		"invalid-yaml-syntax.yaml":              {"parse YAML", "line"},
		"invalid-not-mapping.yaml":              {"must be a mapping"},
		"invalid-too-many-constraints.yaml":     {`line 21: claims[0].spec.devices.constraints: Too many: 33: must have at most 32 items`},
		"invalid-claim-limits.yaml": {
			`line 24: claims[0].spec.devices.requests: Too many: 33: must have at most 32 items`,
			`line 59: claims[0].spec.devices.constraints[0].requests: Too many: 33: must have at most 32 items`,
			`line 64: claims[1].spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items`,
			`line 69: claims[2].spec.devices.requests[0].exactly.selectors: Too many: 33: must have at most 32 items`,
			`line 74: claims[3].spec.devices.requests[0].exactly.derivedAttributes: Too many: 33: must have at most 32 items`,
			`line 80: claims[4].spec.devices.config: Too many: 33: must have at most 32 items`,
		},
		"invalid-class-limits.yaml": {
			`line 9: deviceClasses[0].spec.selectors: Too many: 33: must have at most 32 items`,
			`line 10: deviceClasses[0].spec.config: Too many: 33: must have at most 32 items`,
		},
		"invalid-cel-limits.yaml": {
			`line 22: claims[0].spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: may not be more than 10240 bytes`,
			`line 23: claims[0].spec.devices.requests[1].exactly.selectors[0].cel.expression: Forbidden: too complex: estimated cost 9673956 exceeds the limit of 1000000`,
		},
		"invalid-slice-limits.yaml": {
			`line 18: resourceSlices[0].spec.devices: Too many: 129: must have at most 128 items`,
			`resourceSlices[1].spec.sharedCounters: Too many: 9: must have at most 8 items`,
			`resourceSlices[1].spec.sharedCounters[8].counters: Too many: 33: must have at most 32 items`,
			`resourceSlices[2].spec.devices: Too many: 65: must have at most 64 items when a device has taints, consumes counters or has list-type attributes`,
			`resourceSlices[3].spec.driver: Too long: may not be more than 63 bytes`,
			`resourceSlices[4].spec.pool.name: Too long: may not be more than 253 bytes`,
		},
		"invalid-device-limits.yaml": {
			`line 34: resourceSlices[1].spec.devices[0]: Invalid value: 33: the total number of attributes and capacities must not exceed 32`,
			`line 35: resourceSlices[1].spec.devices[1]: Invalid value: 49: the total number of attribute values must not exceed 48`,
			`line 36: resourceSlices[1].spec.devices[2].attributes[model].string: Too long: may not be more than 64 bytes`,
			`resourceSlices[1].spec.devices[2].attributes[versions].versions[0]: Too long: may not be more than 64 bytes`,
			`line 37: resourceSlices[1].spec.devices[3].attributes[dddddddddddddddddddddddddddddddddddddddddddddddddddd.example.com/x]: Too long: the domain may not be more than 63 bytes`,
			`resourceSlices[1].spec.devices[3].attributes[gpu.example.com/iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii]: Too long: the identifier may not be more than 32 bytes`,
			`resourceSlices[1].spec.devices[3].capacity[ccccccccccccccccccccccccccccccccc]: Too long: the identifier may not be more than 32 bytes`,
			`line 38: resourceSlices[1].spec.devices[4].taints: Too many: 17: must have at most 16 items`,
			`line 39: resourceSlices[1].spec.devices[5].bindingConditions: Too many: 5: must have at most 4 items`,
			`resourceSlices[1].spec.devices[5].bindingFailureConditions: Too many: 5: must have at most 4 items`,
			`line 40: resourceSlices[1].spec.devices[6].consumesCounters: Too many: 3: must have at most 2 items`,
			`line 41: resourceSlices[1].spec.devices[7].consumesCounters[0].counters: Too many: 33: must have at most 32 items`,
			`line 42: resourceSlices[1].spec.devices[8].consumesCounters[0].compatibilityGroups: Too many: 3: must have at most 2 items`,
			`line 43: resourceSlices[1].spec.devices[9].capacity[memory].requestPolicy.validValues: Too many: 11: must have at most 10 items`,
		},
		"invalid-allocation-too-many-results.yaml": {`allocatedClaims[0].status.allocation.devices.results: Too many: 33: must have at most 32 items`},
		"invalid-allocated-missing-device.yaml": {
			`allocatedClaims[0].status.allocation.devices.results[1].device: Not found: "gpu-9": no ResourceSlice of the scenario publishes device gpu.example.com/node-1/gpu-9`,
			`allocatedClaims[0].status.allocation.devices.results[2].device: Not found: "gpu-1": no ResourceSlice of the scenario publishes device gpu.example.com/node-2/gpu-1`,
			`allocatedClaims[0].status.allocation.devices.results[3].device: Not found: "gpu-1": no ResourceSlice of the scenario publishes device nic.example.com/node-1/gpu-1`,
			`allocatedClaims[0].status.allocation.devices.results[4].request: Not found: "nope"`,
		},
		"invalid-allocated-twice.yaml": {
			`allocatedClaims[1].status.allocation.devices.results[0].device: Duplicate value: "gpu-0": device gpu.example.com/node-1/gpu-0 is also held by claim default/first (allocatedClaims[0].status.allocation.devices.results[0])`,
			`allocatedClaims[1].status.allocation.devices.results[2].device: Duplicate value: "gpu-1": device gpu.example.com/node-1/gpu-1 is also held by claim default/second (allocatedClaims[1].status.allocation.devices.results[1])`,
			`allocatedClaims[2].status.allocation.devices.results[0].shareID: Duplicate value: "7c4b6fd2-8f8e-4b59-9a4c-1f0e4c3a2b10": device gpu.example.com/node-1/shared is also held under this shareID by claim default/first (allocatedClaims[0].status.allocation.devices.results[1])`,
			`allocatedClaims[2].status.allocation.devices.results[1].device: Duplicate value: "shared": device gpu.example.com/node-1/shared is also held by claim default/first (allocatedClaims[0].status.allocation.devices.results[1])`,
		},
		"invalid-second-document.yaml":         {"line 37: a second YAML document"},
		"invalid-second-document-garbage.yaml": {"line 37: a second YAML document"},
	}
	files, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if _, ok := tests[filepath.Base(file)]; !ok {
			t.Errorf("%s has no expected error in this table", file)
		}
	}
	for name, wants := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name)
			s, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) = %q, want an error", path, s.Name)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), "file "+path) {
				t.Errorf("error does not name the file:\n%v", err)
			}
			for _, want := range wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not contain %q:\n%v", want, err)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v, want os.ErrNotExist", err)
	}
}

func TestDefault(t *testing.T) {
	s, err := Load("testdata/valid-basic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, sr := range s.Claims[0].Spec.Devices.Requests[0].FirstAvailable {
		if sr.AllocationMode != resourceapi.DeviceAllocationModeExactCount || sr.Count != 1 {
			t.Errorf("subrequest %s: mode %q count %d, want ExactCount 1", sr.Name, sr.AllocationMode, sr.Count)
		}
	}
	all := &Scenario{Claims: []*resourceapi.ResourceClaim{{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{AllocationMode: resourceapi.DeviceAllocationModeAll}}}}}}}}
	all.Default()
	if e := all.Claims[0].Spec.Devices.Requests[0].Exactly; e.Count != 0 || all.APIVersion != APIVersion || all.Kind != Kind {
		t.Errorf("Default: count %d apiVersion %q kind %q, want 0, %s, %s", e.Count, all.APIVersion, all.Kind, APIVersion, Kind)
	}
}

func TestAllocatedState(t *testing.T) {
	share := types.UID("share-1")
	result := func(device string, admin bool, shareID *types.UID) resourceapi.DeviceRequestAllocationResult {
		r := resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: "d", Pool: "p", Device: device, ShareID: shareID}
		if admin {
			r.AdminAccess = ptr.To(true)
		}
		if shareID != nil {
			r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("1Gi")}
		}
		return r
	}
	s := &Scenario{AllocatedClaims: []*resourceapi.ResourceClaim{{
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{result("a", false, nil), result("b", true, nil), result("c", false, &share)},
		}}},
	}}}
	tests := []struct {
		name       string
		consumable bool
		devices    []string
		shared     []string
		capacity   map[string]string
	}{
		{name: "consumable capacity off: shared results count as exclusive", devices: []string{"a", "c"}},
		{name: "consumable capacity on", consumable: true, devices: []string{"a"}, shared: []string{"c"}, capacity: map[string]string{"c": "1Gi"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.Features.ConsumableCapacity = tc.consumable
			state := s.AllocatedState()
			wantDevices := sets.New[structured.DeviceID]()
			for _, d := range tc.devices {
				wantDevices.Insert(structured.MakeDeviceID("d", "p", d))
			}
			if !state.AllocatedDevices.Equal(wantDevices) {
				t.Errorf("AllocatedDevices = %v, want %v", state.AllocatedDevices.UnsortedList(), wantDevices.UnsortedList())
			}
			wantShared := sets.New[structured.SharedDeviceID]()
			for _, d := range tc.shared {
				wantShared.Insert(structured.MakeSharedDeviceID(structured.MakeDeviceID("d", "p", d), &share))
			}
			if !state.AllocatedSharedDeviceIDs.Equal(wantShared) {
				t.Errorf("AllocatedSharedDeviceIDs = %v, want %v", state.AllocatedSharedDeviceIDs.UnsortedList(), wantShared.UnsortedList())
			}
			got := map[string]string{}
			for id, cc := range state.AggregatedCapacity {
				got[id.Device.String()] = cc["memory"].String()
			}
			if diff := cmp.Diff(tc.capacity, got, cmp.Comparer(func(a, b map[string]string) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b) })); diff != "" {
				t.Errorf("AggregatedCapacity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClassLister(t *testing.T) {
	s, err := Load("testdata/valid-basic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l := s.ClassLister()
	if c, err := l.Get("gpu.example.com"); err != nil || c.Name != "gpu.example.com" {
		t.Errorf("Get(gpu.example.com) = %v, %v", c, err)
	}
	if _, err := l.Get("nope"); err == nil || !strings.Contains(err.Error(), `"nope" not found`) {
		t.Errorf("Get(nope) error = %v, want not found", err)
	}
	if list, _ := l.List(); len(list) != 1 {
		t.Errorf("List() has %d classes, want 1", len(list))
	}
}

func TestCommit(t *testing.T) {
	s, err := Load("testdata/valid-basic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(nil, nil); err == nil {
		t.Error("Commit with no results for one claim succeeded")
	}
	res := resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "gpu/numa1", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-1"}}}}
	next, err := s.Commit([]resourceapi.AllocationResult{res}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Claims) != 0 || len(next.AllocatedClaims) != 2 || s.Claims[0].Status.Allocation != nil {
		t.Fatalf("Commit: %d claims, %d allocated, original modified: %v", len(next.Claims), len(next.AllocatedClaims), s.Claims[0].Status.Allocation != nil)
	}
	if got := next.AllocatedState().AllocatedDevices.Len(); got != 2 {
		t.Errorf("after Commit %d devices in use, want 2", got)
	}
}
