package nvmlstate

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sampleMIG is sample() with MIG enabled on GPU 3: two GI profiles, a 3g GI
// at 4:4 holding two CIs, and a 1g GI at 0:1.
func sampleMIG() *State {
	s := sample()
	s.GPUs[0].MIGMode = 1
	s.MIG = []MIG{{GPU: 3, MaxDevices: 7, MemorySlices: 8}}
	s.GIProfiles = []GIProfile{
		{GPU: 3, ID: 19, Index: 0, Name: "1g.10gb", Slices: 1, MemorySlices: 1, Instances: 7, MemoryMB: 9984,
			SMs: 16, CopyEngines: 1, Decoders: 1, JPEGs: 1, Placements: []int{0, 1, 2, 3, 4, 5, 6}},
		{GPU: 3, ID: 9, Index: 2, Name: "3g.40gb", Slices: 3, MemorySlices: 4, Instances: 2, MemoryMB: 40448,
			SMs: 60, CopyEngines: 3, Decoders: 3, JPEGs: 3, P2P: true, Placements: []int{0, 4}},
	}
	s.CIProfiles = []CIProfile{
		{GPU: 3, GIProfile: 19, ID: 0, Name: "1g.10gb", Slices: 1, Instances: 1, SMs: 16, Placements: []int{0}},
		{GPU: 3, GIProfile: 9, ID: 0, Name: "1c.3g.40gb", Slices: 1, Instances: 3, SMs: 16, Placements: []int{0, 1, 2}},
		{GPU: 3, GIProfile: 9, ID: 1, Name: "2c.3g.40gb", Slices: 2, Instances: 1, SMs: 32, Placements: []int{0}},
		{GPU: 3, GIProfile: 9, ID: 2, Name: "3g.40gb", Slices: 3, Instances: 1, SMs: 60, Placements: []int{0}},
	}
	s.GPUInstances = []GPUInstance{
		{GPU: 3, ID: 1, Profile: 9, Start: 4, Size: 4, CapMinor: GIAccessMinor(3, 1)},
		{GPU: 3, ID: 11, Profile: 19, Start: 0, Size: 1, CapMinor: GIAccessMinor(3, 11)},
	}
	s.ComputeInstances = []ComputeInstance{
		{GPU: 3, GI: 1, ID: 0, Profile: 1, Start: 0, Size: 2, UUID: "MIG-11111111-2222-3333-4444-555555555555", CapMinor: CIAccessMinor(3, 1, 0)},
		{GPU: 3, GI: 1, ID: 1, Profile: 0, Start: 2, Size: 1, UUID: "MIG-11111111-2222-3333-4444-555555555556", CapMinor: CIAccessMinor(3, 1, 1)},
		{GPU: 3, GI: 11, ID: 0, Profile: 0, Start: 0, Size: 1, UUID: "MIG-11111111-2222-3333-4444-555555555557", CapMinor: CIAccessMinor(3, 11, 0)},
	}
	return s
}

func writeString(t *testing.T, s *State) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, s); err != nil {
		t.Fatalf("write: %v", err)
	}
	return buf.String()
}

func TestMIGRoundTrip(t *testing.T) {
	text := writeString(t, sampleMIG())
	for _, line := range []string{
		"mig\tgpu=3\tmaxDevices=7\tmemorySlices=8\n",
		"giprofile\tgpu=3\tid=9\tindex=2\tname=3g.40gb\tslices=3\tmemorySlices=4\tinstances=2\tmemoryMB=40448\tsms=60" +
			"\tcopyEngines=3\tdecoders=3\tencoders=0\tjpegs=3\tofas=0\tp2p=1\tplacements=0,4\n",
		"ciprofile\tgpu=3\tgiProfile=9\tid=0\tname=1c.3g.40gb\tslices=1\tinstances=3\tsms=16\tplacements=0,1,2\n",
		"gi\tgpu=3\tid=1\tprofile=9\tstart=4\tsize=4\tcapMinor=417\n",
		"ci\tgpu=3\tgi=1\tid=1\tprofile=0\tstart=2\tsize=1\tuuid=MIG-11111111-2222-3333-4444-555555555556\tcapMinor=419\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("written state lacks %q:\n%s", line, text)
		}
	}
	got, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if diff := cmp.Diff(sampleMIG(), got); diff != "" {
		t.Errorf("round trip changed the state (-want +got):\n%s", diff)
	}
	// The gpu record is written exactly as before MIG records existed, and
	// the end record follows the MIG records.
	plain := strings.TrimSuffix(writeString(t, sample()), EndRecord+"\n")
	if !strings.HasPrefix(text, strings.Replace(plain, "migMode=0", "migMode=1", 1)) || !strings.HasSuffix(text, "\n"+EndRecord+"\n") {
		t.Errorf("MIG records changed the existing records:\n%s\nvs\n%s", text, plain)
	}
}

func TestMIGValidate(t *testing.T) {
	tests := map[string]struct {
		change func(s *State)
		want   string
	}{
		"mig on unknown gpu":      {func(s *State) { s.MIG[0].GPU = 4 }, "mig[0].gpu 4: no gpu record"},
		"mig on non-MIG gpu":      {func(s *State) { s.GPUs[0].MIGCapable, s.GPUs[0].MIGMode = false, 0 }, "not MIG capable"},
		"two mig records":         {func(s *State) { s.MIG = append(s.MIG, s.MIG[0]) }, "second mig record"},
		"max devices":             {func(s *State) { s.MIG[0].MaxDevices = 0 }, "mig[0].maxDevices 0"},
		"profile without mig":     {func(s *State) { s.GIProfiles[0].GPU = 5 }, "giprofile[0].gpu 5: no mig record"},
		"duplicate profile id":    {func(s *State) { s.GIProfiles[1].ID = 19 }, "giprofile[1].id 19 used twice"},
		"duplicate profile index": {func(s *State) { s.GIProfiles[1].Index = 0 }, "giprofile[1].index 0"},
		"placement past the end":  {func(s *State) { s.GIProfiles[1].Placements = []int{0, 5} }, "giprofile[1].placements [0 5]"},
		"placements unordered":    {func(s *State) { s.GIProfiles[1].Placements = []int{4, 0} }, "giprofile[1].placements"},
		"too many instances":      {func(s *State) { s.GIProfiles[1].Instances = 3 }, "giprofile[1].instances 3"},
		"name with tab":           {func(s *State) { s.GIProfiles[0].Name = "a\tb" }, "giprofile[0].name"},
		"ci profile too big":      {func(s *State) { s.CIProfiles[2].Slices = 4 }, "ciprofile[2].slices 4"},
		"ci profile orphan":       {func(s *State) { s.CIProfiles[0].GIProfile = 5 }, "ciprofile[0]: no giprofile 5"},
		"gi with mig disabled":    {func(s *State) { s.GPUs[0].MIGMode = 0 }, "gi[0]: gpu 3 has migMode 0"},
		"gi id range":             {func(s *State) { s.GPUInstances[1].ID = 15 }, "gi[1].id 15 out of range"},
		"gi id twice":             {func(s *State) { s.GPUInstances[1].ID = 1 }, "gi[1].id 1 used twice"},
		"gi placement":            {func(s *State) { s.GPUInstances[0].Start = 2 }, "gi[0]: placement 2:4"},
		"gi overlap": {func(s *State) {
			s.GPUInstances[1].Start, s.GPUInstances[1].ID, s.GPUInstances[1].CapMinor = 5, 8, GIAccessMinor(3, 8)
			s.ComputeInstances = s.ComputeInstances[:2]
		}, "gi[1]: placement 5:1 overlaps"},
		"gi cap minor":       {func(s *State) { s.GPUInstances[0].CapMinor++ }, "gi[0].capMinor 418, want 417"},
		"ci without gi":      {func(s *State) { s.ComputeInstances[2].GI = 12 }, "ci[2]: no gi 12"},
		"ci id twice":        {func(s *State) { s.ComputeInstances[1].ID = 0 }, "ci[1].id 0"},
		"ci placement":       {func(s *State) { s.ComputeInstances[1].Start = 3 }, "ci[1]: placement 3:1"},
		"ci overlap":         {func(s *State) { s.ComputeInstances[1].Start = 1 }, "ci[1]: placement 1:1 overlaps"},
		"ci bad uuid":        {func(s *State) { s.ComputeInstances[0].UUID = "GPU-11111111-2222-3333-4444-555555555555" }, "ci[0].uuid"},
		"ci uuid twice":      {func(s *State) { s.ComputeInstances[1].UUID = s.ComputeInstances[0].UUID }, "ci[1].uuid"},
		"ci cap minor":       {func(s *State) { s.ComputeInstances[2].CapMinor = 3 }, "ci[2].capMinor 3"},
		"ci unknown profile": {func(s *State) { s.ComputeInstances[2].Profile = 1 }, "ci[2]: no ciprofile 1 for giprofile 19"},
		"too many devices":   {func(s *State) { s.MIG[0].MaxDevices = 2 }, "ci[2]: more than 2 MIG devices"},
	}
	if err := sampleMIG().Validate(); err != nil {
		t.Fatalf("sample: %v", err)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := sampleMIG()
			tc.change(s)
			err := s.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}

func TestMIGParseErrors(t *testing.T) {
	valid := writeString(t, sampleMIG())
	tests := map[string]struct{ text, want string }{
		"empty list":      {strings.Replace(valid, "placements=0,4", "placements=", 1), `field placements="" is not a comma-separated list`},
		"trailing comma":  {strings.Replace(valid, "placements=0,4", "placements=0,4,", 1), "field placements"},
		"signed in list":  {strings.Replace(valid, "placements=0,4", "placements=0,-4", 1), "field placements"},
		"missing field":   {strings.Replace(valid, "\tcapMinor=417", "", 1), "missing field capMinor"},
		"flag not 0 or 1": {strings.Replace(valid, "p2p=1", "p2p=2", 1), "field p2p=2 must be 0 or 1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.text))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse = %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}
