package gpu

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func migTable(t *testing.T, model string) *MIGTable {
	t.Helper()
	tab, ok := LookupMIGTable(model)
	if !ok {
		t.Fatalf("no MIG table for %s", model)
	}
	return tab
}

func giProfile(t *testing.T, model, name string) GIProfile {
	t.Helper()
	p, ok := migTable(t, model).GIProfile(name)
	if !ok {
		t.Fatalf("%s has no GI profile %s", model, name)
	}
	return p
}

// TestWellKnownMIGProfiles pins values `nvidia-smi mig -lgip/-lgipp` shows.
func TestWellKnownMIGProfiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model, name string
		id, index   int
		size        int
		starts      []int
		instances   int
		memoryMB    uint64
		sms         int
	}{
		{"A100-SXM4-40GB", "1g.5gb", 19, 0, 1, []int{0, 1, 2, 3, 4, 5, 6}, 7, 4864, 14},
		{"A100-SXM4-40GB", "1g.5gb+me", 20, 7, 1, []int{0, 1, 2, 3, 4, 5, 6}, 1, 4864, 14},
		{"A100-SXM4-40GB", "1g.10gb", 15, 9, 2, []int{0, 2, 4, 6}, 4, 9856, 14},
		{"A100-SXM4-40GB", "2g.10gb", 14, 1, 2, []int{0, 2, 4}, 3, 9856, 28},
		{"A100-SXM4-40GB", "3g.20gb", 9, 2, 4, []int{0, 4}, 2, 19968, 42},
		{"A100-SXM4-40GB", "4g.20gb", 5, 3, 4, []int{0}, 1, 19968, 56},
		{"A100-SXM4-40GB", "7g.40gb", 0, 4, 8, []int{0}, 1, 40192, 98},
		{"A100-SXM4-80GB", "1g.10gb", 19, 0, 1, []int{0, 1, 2, 3, 4, 5, 6}, 7, 9728, 14},
		{"A100-SXM4-80GB", "7g.80gb", 0, 4, 8, []int{0}, 1, 80896, 98},
		{"H100-80GB-HBM3", "1g.10gb", 19, 0, 1, []int{0, 1, 2, 3, 4, 5, 6}, 7, 9984, 16},
		{"H100-80GB-HBM3", "1g.20gb", 15, 9, 2, []int{0, 2, 4, 6}, 4, 20096, 26},
		{"H100-80GB-HBM3", "3g.40gb", 9, 2, 4, []int{0, 4}, 2, 40448, 60},
		{"H100-80GB-HBM3", "7g.80gb", 0, 4, 8, []int{0}, 1, 81152, 132},
		{"H200-141GB-HBM3e", "1g.18gb", 19, 0, 1, []int{0, 1, 2, 3, 4, 5, 6}, 7, 16384, 16},
		{"H200-141GB-HBM3e", "7g.141gb", 0, 4, 8, []int{0}, 1, 143360, 132},
	}
	for _, tc := range tests {
		p := giProfile(t, tc.model, tc.name)
		got := []any{p.ID, p.Index, p.MemorySlices, p.Starts, p.Instances, p.MemoryMB, p.SMs}
		want := []any{tc.id, tc.index, tc.size, tc.starts, tc.instances, tc.memoryMB, tc.sms}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s %s: [id index size starts instances memoryMB SMs] (-want +got):\n%s", tc.model, tc.name, diff)
		}
	}
	if MaxMIGDevices != 7 {
		t.Errorf("MaxMIGDevices = %d, want 7", MaxMIGDevices)
	}
}

// migMemoryGB is go-nvlib's rounding of a profile's memory to the "<n>gb"
// of its name (pkg/nvlib/device/mig_profile.go getMigMemorySizeGB).
func migMemoryGB(totalBytes, memoryMB uint64) uint64 {
	const oneGB = 1 << 30
	frac := float64(memoryMB<<20) / float64(totalBytes)
	frac = math.Ceil(frac*8) / 8
	totalGB := float64((totalBytes + oneGB - 1) / oneGB)
	return uint64(math.Round(frac * totalGB))
}

// TestMIGTablesConsistent checks every table against the rules NVML and
// go-nvlib follow, so a typo in the data cannot go unnoticed.
func TestMIGTablesConsistent(t *testing.T) {
	t.Parallel()
	for model, tab := range migTables {
		m, ok := LookupModel(model)
		if !ok || !m.MIGCapable {
			t.Errorf("%s: MIG table without a MIG-capable catalogue model", model)
			continue
		}
		if len(tab.GIProfiles) != 7 {
			t.Errorf("%s: %d GI profiles, want 7", model, len(tab.GIProfiles))
		}
		ids, indexes := map[int]bool{}, map[int]bool{}
		for _, p := range tab.GIProfiles {
			where := model + " " + p.Name
			if ids[p.ID] || indexes[p.Index] {
				t.Errorf("%s: id %d or index %d repeated", where, p.ID, p.Index)
			}
			ids[p.ID], indexes[p.Index] = true, true
			// The name is <slices>g.<GB>gb[+me], GB rounded as go-nvlib does.
			base, _ := strings.CutSuffix(p.Name, "+me")
			want := fmt.Sprintf("%dg.%dgb", p.Slices, migMemoryGB(uint64(m.Memory), p.MemoryMB))
			if base != want {
				t.Errorf("%s: memory %d MiB of %d MiB rounds to %s", where, p.MemoryMB, m.Memory>>20, want)
			}
			if p.MemoryMB<<20 > uint64(m.Memory) {
				t.Errorf("%s: memory exceeds the GPU's", where)
			}
			if wantInst := len(p.Starts); p.Instances != wantInst && !strings.HasSuffix(p.Name, "+me") {
				t.Errorf("%s: instanceCount %d, %d placements", where, p.Instances, wantInst)
			}
			for _, s := range p.Starts {
				if _, ok := GIID(s, p.MemorySlices); !ok {
					t.Errorf("%s: placement %d:%d outside the eight memory slices", where, s, p.MemorySlices)
				}
			}
			cis := tab.CIProfiles(p)
			if full := cis[len(cis)-1]; full.Name != p.Name || full.Slices != p.Slices || full.SMs != p.SMs {
				t.Errorf("%s: last CI profile %+v does not span the GI", where, full)
			}
		}
	}
}

func TestGIID(t *testing.T) {
	t.Parallel()
	tests := []struct{ start, size, want int }{
		{0, 8, 0}, {4, 4, 1}, {0, 4, 2}, {4, 2, 3}, {6, 2, 4}, {0, 2, 5}, {2, 2, 6},
		{4, 1, 7}, {5, 1, 8}, {6, 1, 9}, {7, 1, 10}, {0, 1, 11}, {1, 1, 12}, {2, 1, 13}, {3, 1, 14},
	}
	for _, tc := range tests {
		if got, ok := GIID(tc.start, tc.size); !ok || got != tc.want {
			t.Errorf("GIID(%d, %d) = %d, %v; want %d", tc.start, tc.size, got, ok, tc.want)
		}
	}
	for _, bad := range [][2]int{{1, 2}, {0, 3}, {8, 1}, {-1, 1}, {4, 8}} {
		if id, ok := GIID(bad[0], bad[1]); ok {
			t.Errorf("GIID(%d, %d) = %d, want no id", bad[0], bad[1], id)
		}
	}
}

func TestCIProfiles(t *testing.T) {
	t.Parallel()
	tab := migTable(t, "A100-SXM4-40GB")
	type ci struct {
		ID     int
		Name   string
		Slices int
		SMs    int
		Starts []int
	}
	summarize := func(ps []CIProfile) []ci {
		var out []ci
		for _, p := range ps {
			if p.Instances != len(p.Starts) {
				t.Errorf("%s: instances %d, %d starts", p.Name, p.Instances, len(p.Starts))
			}
			out = append(out, ci{p.ID, p.Name, p.Slices, p.SMs, p.Starts})
		}
		return out
	}
	want7 := []ci{
		{0, "1c.7g.40gb", 1, 14, []int{0, 1, 2, 3, 4, 5, 6}},
		{1, "2c.7g.40gb", 2, 28, []int{0, 2, 4}},
		{2, "3c.7g.40gb", 3, 42, []int{0, 4}},
		{3, "4c.7g.40gb", 4, 56, []int{0}},
		{4, "7g.40gb", 7, 98, []int{0}},
	}
	if diff := cmp.Diff(want7, summarize(tab.CIProfiles(giProfile(t, "A100-SXM4-40GB", "7g.40gb")))); diff != "" {
		t.Errorf("7g.40gb CI profiles (-want +got):\n%s", diff)
	}
	want4 := []ci{
		{0, "1c.4g.20gb", 1, 14, []int{0, 1, 2, 3}},
		{1, "2c.4g.20gb", 2, 28, []int{0, 2}},
		{3, "4g.20gb", 4, 56, []int{0}},
	}
	if diff := cmp.Diff(want4, summarize(tab.CIProfiles(giProfile(t, "A100-SXM4-40GB", "4g.20gb")))); diff != "" {
		t.Errorf("4g.20gb CI profiles (-want +got):\n%s", diff)
	}
}

// TestEveryNamedLayoutIsValid expands every layout of every model.
func TestEveryNamedLayoutIsValid(t *testing.T) {
	t.Parallel()
	for model, tab := range migTables {
		for _, name := range tab.LayoutNames() {
			g := &GPU{Model: model, MIG: &MIGConfig{Layout: name}}
			defaultGPU(g)
			defaultMIG(g.MIG)
			if errs := validateMIG(nil, g); len(errs) > 0 {
				t.Errorf("%s %s: %v", model, name, errs)
				continue
			}
			gis, err := g.MIGLayout()
			if err != nil {
				t.Errorf("%s %s: %v", model, name, err)
			}
			profileName, named := strings.CutPrefix(name, "all-")
			if p, ok := tab.GIProfile(profileName); named && ok && len(gis) != p.Instances {
				t.Errorf("%s %s: %d GIs, want %d", model, name, len(gis), p.Instances)
			}
			if name == LayoutAllBalanced && len(gis) != 4 {
				t.Errorf("%s %s: %d GIs, want 4", model, name, len(gis))
			}
			ids := make([]string, len(gis))
			for i, gi := range gis {
				ids[i] = strconv.Itoa(gi.ID)
			}
			if !slices.IsSortedFunc(gis, func(a, b GPUInstance) int { return a.ID - b.ID }) {
				t.Errorf("%s %s: GIs not ordered by id: %v", model, name, ids)
			}
		}
	}
}
