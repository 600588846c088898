package simulate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/profile"
)

// TestProfileInventoryMatchesDiscovery renders profiles and discovers them
// through the real NVML shim and sysfs (not parallel: the shim's root comes
// from the environment): ProfileInventory must predict discovery exactly,
// for plain GPUs, dynamic and static MIG, and a replicated profile whose
// copies sit in PCI domain 1.
func TestProfileInventoryMatchesDiscovery(t *testing.T) {
	mixed9, err := ReplicateProfileGPUs(builtinProfile(t, "mixed-mig"), 9)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    *profile.Profile
	}{
		{"dgx-h100", builtinProfile(t, "dgx-h100")},
		{"mixed-mig", builtinProfile(t, "mixed-mig")},
		{"mixed-mig replicated to 9 GPUs", mixed9},
		{"a100 dynamic MIG", loadProfile(t, a100DynamicMIG)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := renderAndDiscover(t, tc.p)
			got, err := ProfileInventory(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("inventory (-discovered +from profile):\n%s", diff)
			}
		})
	}
}

func TestReplicateProfileGPUs(t *testing.T) {
	t.Parallel()
	dgx := builtinProfile(t, "dgx-h100")
	for _, tc := range []struct {
		name   string
		p      *profile.Profile
		gpus   int
		minors []int
		// domains lists the PCI domain of each GPU in enumeration order.
		domains []string
	}{
		{"fewer", dgx, 3, []int{0, 1, 2}, []string{"0000", "0000", "0000"}},
		{"same", dgx, 8, []int{0, 1, 2, 3, 4, 5, 6, 7}, strings.Fields(strings.Repeat("0000 ", 8))},
		{"one and a half copies", dgx, 12, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
			append(strings.Fields(strings.Repeat("0000 ", 8)), "0001", "0001", "0001", "0001")},
		{"64 of one", loadProfile(t, a100DynamicMIG), 64, seq(64), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := ReplicateProfileGPUs(tc.p, tc.gpus)
			if err != nil {
				t.Fatal(err)
			}
			inv, err := ProfileInventory(p)
			if err != nil {
				t.Fatal(err)
			}
			var minors []int
			var domains []string
			uuids := map[string]bool{}
			for i, g := range inv.GPUs {
				if g.Index != i {
					t.Errorf("GPU %d has index %d", i, g.Index)
				}
				minors = append(minors, g.Minor)
				domains = append(domains, g.PCIBusID[:4])
				if !strings.HasPrefix(g.PCIeRoot, "pci"+g.PCIBusID[:4]+":") {
					t.Errorf("GPU %s has PCIe root %s in another domain", g.PCIBusID, g.PCIeRoot)
				}
				uuids[g.UUID] = true
			}
			if diff := cmp.Diff(tc.minors, minors); diff != "" {
				t.Errorf("minors (-want +got):\n%s", diff)
			}
			if tc.domains != nil {
				if diff := cmp.Diff(tc.domains, domains); diff != "" {
					t.Errorf("PCI domains (-want +got):\n%s", diff)
				}
			}
			if len(uuids) != tc.gpus {
				t.Errorf("%d distinct UUIDs for %d GPUs", len(uuids), tc.gpus)
			}
			// The original GPUs keep their UUIDs.
			orig, err := ProfileInventory(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			for i := range min(len(orig.GPUs), tc.gpus) {
				if inv.GPUs[i].UUID != orig.GPUs[i].UUID {
					t.Errorf("GPU %d UUID %s, the profile's is %s", i, inv.GPUs[i].UUID, orig.GPUs[i].UUID)
				}
			}
		})
	}
	if len(dgx.Spec.GPUs) != 8 || len(dgx.Spec.RootComplexes) != 2 {
		t.Errorf("replication changed its input: %d GPUs, %d root complexes", len(dgx.Spec.GPUs), len(dgx.Spec.RootComplexes))
	}
}

func TestReplicateProfileGPUsErrors(t *testing.T) {
	t.Parallel()
	dgx := builtinProfile(t, "dgx-h100")
	for _, tc := range []struct {
		gpus    int
		wantErr string
	}{
		{0, "0 GPUs, want at least 1"},
		// Copy 31 would need minor 255.
		{256, "spec.gpus[255].minor"},
	} {
		_, err := ReplicateProfileGPUs(dgx, tc.gpus)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%d GPUs: error %v, want one containing %q", tc.gpus, err, tc.wantErr)
		}
	}
}

func TestProfileInventoryMIG(t *testing.T) {
	t.Parallel()
	inv, err := ProfileInventory(builtinProfile(t, "mixed-mig"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range inv.GPUs {
		line := fmt.Sprintf("%s minor %d:", g.ProductName, g.Minor)
		if g.MIG != nil {
			line += fmt.Sprintf(" %d profiles", len(g.MIG.Profiles))
			for _, in := range g.MIG.Instances {
				line += fmt.Sprintf(" %s@%d(gi%d,ci%d)", in.Name, in.Start, in.GI, in.CI)
			}
		}
		got = append(got, line)
	}
	// mixed-mig.yaml: A100 0 all-balanced, placed largest first at the
	// highest free start (3g at 4, 2g at 2, 1g at 1 and 0); A100 1 explicit
	// GIs, the 2g.10gb one with two 1-slice CIs; GI ids by gpu.GIID; the
	// H100s in MIG mode without instances; the H200s without MIG.
	want := []string{
		"NVIDIA A100-SXM4-40GB minor 0: 7 profiles 3g.20gb@4(gi1,ci0) 2g.10gb@2(gi6,ci0) 1g.5gb@0(gi11,ci0) 1g.5gb@1(gi12,ci0)",
		"NVIDIA A100-SXM4-40GB minor 1: 7 profiles 3g.20gb@4(gi1,ci0) 1c.2g.10gb@0(gi5,ci0) 1c.2g.10gb@0(gi5,ci1) 1g.5gb@2(gi13,ci0) 1g.5gb+me@3(gi14,ci0)",
		"NVIDIA H100 80GB HBM3 minor 2: 7 profiles",
		"NVIDIA H100 80GB HBM3 minor 3: 7 profiles",
		"NVIDIA H200 minor 4:",
		"NVIDIA H200 minor 5:",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GPUs (-want +got):\n%s", diff)
	}
}
