package driver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

func TestBuildResources(t *testing.T) {
	t.Parallel()
	inv := testInventory()
	inv.GPUs = inv.GPUs[:2]
	// The second GPU has no sysfs information and no memory information.
	inv.GPUs[1].PCIeRoot, inv.GPUs[1].NUMANode, inv.GPUs[1].MemoryBytes = "", -1, 0
	inv.GPUs[1].ProductName = strings.Repeat("x", 70)

	got, err := buildResources(testNode, inv, publishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }
	ver := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{VersionValue: &s} }
	num := func(i int64) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{IntValue: &i} }
	want := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{testNode: {Slices: []resourceslice.Slice{{
		Devices: []resourceapi.Device{
			{
				Name: "gpu-0",
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"type":                            str("gpu"),
					"uuid":                            str("GPU-00000000-1111-2222-3333-444444444444"),
					"productName":                     str("NVIDIA H100 80GB HBM3"),
					"architecture":                    str("Hopper"),
					"brand":                           str("Tesla"),
					"driverVersion":                   ver("570.172.8"),
					"cudaDriverVersion":               ver("12.8.0"),
					"cudaComputeCapability":           ver("9.0.0"),
					"minor":                           num(0),
					"index":                           num(0),
					"resource.kubernetes.io/pciBusID": str("0000:1b:00.0"),
					"resource.kubernetes.io/pcieRoot": str("pci0000:00"),
					"resource.kubernetes.io/numaNode": num(0),
				},
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
					"memory": {Value: resource.MustParse("85520809984")},
				},
			},
			{
				Name: "gpu-1",
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"type":                            str("gpu"),
					"uuid":                            str("GPU-11111111-1111-2222-3333-444444444444"),
					"productName":                     str(strings.Repeat("x", 64)),
					"architecture":                    str("Hopper"),
					"brand":                           str("Tesla"),
					"driverVersion":                   ver("570.172.8"),
					"cudaDriverVersion":               ver("12.8.0"),
					"cudaComputeCapability":           ver("9.0.0"),
					"minor":                           num(1),
					"index":                           num(1),
					"resource.kubernetes.io/pciBusID": str("0000:43:00.0"),
				},
			},
		},
	}}}}}
	quantityEqual := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(want, got, quantityEqual); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
}

func TestBuildResourcesSplitsSlices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		gpus       int
		wantSlices []int
	}{
		{0, []int{0}},
		{1, []int{1}},
		{128, []int{128}},
		{200, []int{128, 72}},
	} {
		t.Run(fmt.Sprint(tc.gpus), func(t *testing.T) {
			t.Parallel()
			inv := &Inventory{DriverVersion: "570.172.08", CUDADriverVersion: 12080}
			for i := range tc.gpus {
				g := testInventory().GPUs[0]
				g.Index, g.Minor = i, i
				inv.GPUs = append(inv.GPUs, g)
			}
			res, err := buildResources(testNode, inv, publishOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var sizes []int
			for _, s := range res.Pools[testNode].Slices {
				sizes = append(sizes, len(s.Devices))
			}
			if diff := cmp.Diff(tc.wantSlices, sizes); diff != "" {
				t.Errorf("slice sizes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildResourcesErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		mutate  func(*Inventory)
		wantErr string
	}{
		{"bad driver version", func(i *Inventory) { i.DriverVersion = "570.x" }, `driver version: version "570.x": part "x" is not a number`},
		{"no CUDA version", func(i *Inventory) { i.CUDADriverVersion = 0 }, "CUDA driver version 0 is not positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inv := testInventory()
			tc.mutate(inv)
			_, err := buildResources(testNode, inv, publishOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestSemver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, wantErr string }{
		{"570.172.08", "570.172.8", ""},
		{"12.8", "12.8.0", ""},
		{"9", "9.0.0", ""},
		{"550.54.15", "550.54.15", ""},
		{"12.570.172.08", "", "more than 3 parts"},
		{"", "", `part "" is not a number`},
		{"1.-2", "", `part "-2" is not a number`},
	} {
		got, err := semver(tc.in)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("semver(%q) error %v, want one containing %q", tc.in, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("semver(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	if got := truncate(strings.Repeat("é", 40)); len(got) != 64 || got != strings.Repeat("é", 32) {
		t.Errorf("truncate of 80 bytes of é = %q (%d bytes)", got, len(got))
	}
	if got := truncate("a" + strings.Repeat("é", 40)); len(got) != 63 {
		t.Errorf("truncate split a rune: %q (%d bytes)", got, len(got))
	}
	if got := truncate("short"); got != "short" {
		t.Errorf("truncate(short) = %q", got)
	}
}
