package gpu

import (
	"fmt"
	"slices"
)

// MIG geometry shared by every catalogue model with MIG: eight memory slices
// and seven compute slices per GPU, at most seven MIG devices, 15 possible GPU
// instances (GI ids 0..14) with up to 8 compute instances each.
const (
	MIGMemorySlices  = 8
	MIGComputeSlices = 7
	MaxMIGDevices    = 7
	MaxGIID          = 14
	MaxCIID          = 7
)

// GIProfile is one MIG GPU-instance profile of a model, as
// nvmlDeviceGetGpuInstanceProfileInfo reports it (nvmlGpuInstanceProfileInfo_t)
// and `nvidia-smi mig -lgip` / `-lgipp` show it.
type GIProfile struct {
	// ID is the driver's profile ID (nvidia-smi's "ID" column; what placement,
	// create and nvmlGpuInstanceInfo_t.profileId use), e.g. 19 for 1g.5gb.
	ID int
	// Index is the NVML_GPU_INSTANCE_PROFILE_* constant that
	// nvmlDeviceGetGpuInstanceProfileInfo takes, e.g. 0 for 1_SLICE, 7 for
	// 1_SLICE_REV1 (+me), 9 for 1_SLICE_REV2 (1g with two memory slices).
	Index int
	// Name is the profile name without the "MIG " prefix, e.g. "1g.5gb+me".
	Name string
	// Slices is the number of compute slices (sliceCount).
	Slices int
	// MemorySlices is the placement size: memory slices the GI occupies.
	MemorySlices int
	// Instances is the most GIs of this profile on one GPU (instanceCount).
	Instances int
	// MemoryMB is memorySizeMB (MiB).
	MemoryMB uint64
	// SMs, CopyEngines, Decoders, Encoders, JPEGs and OFAs are
	// multiprocessorCount, copyEngineCount, decoderCount, encoderCount,
	// jpegCount and ofaCount.
	SMs, CopyEngines, Decoders, Encoders, JPEGs, OFAs int
	// Starts are the valid placement starts, ascending; every placement has
	// size MemorySlices (nvmlDeviceGetGpuInstancePossiblePlacements).
	Starts []int
}

// CIProfile is one compute-instance profile inside a GI profile
// (nvmlComputeInstanceProfileInfo_t). Its shared engine counts are the GI
// profile's copy engines, decoders, encoders, JPEGs and OFAs.
type CIProfile struct {
	// ID is the NVML_COMPUTE_INSTANCE_PROFILE_* value: 0 for 1 slice, 1 for
	// 2, 2 for 3, 3 for 4, 4 for 7 (nvidia-smi -lcip shows the same IDs).
	ID int
	// Name is "<c>c.<gi name>", or the GI profile's name for the CI that
	// spans the whole GI (nvidia-smi's naming).
	Name string
	// Slices is the number of compute slices (sliceCount).
	Slices int
	// Instances is how many such CIs fit in one GI (instanceCount).
	Instances int
	// SMs is multiprocessorCount.
	SMs int
	// Starts are the valid placement starts inside the GI; size Slices.
	Starts []int
}

// MIGTable is a model's MIG description.
type MIGTable struct {
	// SMsPerSlice is the SM count of a one-slice CI inside a larger GI.
	SMsPerSlice int
	// GIProfiles are the model's GPU-instance profiles in NVML index order.
	GIProfiles []GIProfile
}

// GIProfile returns the GI profile called name.
func (t *MIGTable) GIProfile(name string) (GIProfile, bool) {
	i := slices.IndexFunc(t.GIProfiles, func(p GIProfile) bool { return p.Name == name })
	if i < 0 {
		return GIProfile{}, false
	}
	return t.GIProfiles[i], true
}

// GIProfileNames lists the GI profile names in table order.
func (t *MIGTable) GIProfileNames() []string {
	names := make([]string, len(t.GIProfiles))
	for i, p := range t.GIProfiles {
		names[i] = p.Name
	}
	return names
}

// ciSizes are the compute-slice counts NVML has CI profiles for, with their
// NVML_COMPUTE_INSTANCE_PROFILE_* ids.
var ciSizes = []struct{ slices, id int }{{1, 0}, {2, 1}, {3, 2}, {4, 3}, {7, 4}}

// CIProfiles returns the compute-instance profiles of GI profile gi. They
// are derived by rule (the go-nvml mock's A100 and H100 tables follow it):
// one profile per size c in {1, 2, 3, 4, 7} with c <= gi.Slices, except 3
// inside a 4-slice GI; placements start at multiples of the next power of
// two >= c and end inside the GI; a CI smaller than its GI has c·SMsPerSlice
// SMs, the whole-GI CI has the GI's SMs.
func (t *MIGTable) CIProfiles(gi GIProfile) []CIProfile {
	var out []CIProfile
	for _, s := range ciSizes {
		if s.slices > gi.Slices || (s.slices == 3 && gi.Slices == 4) {
			continue
		}
		align := 1
		for align < s.slices {
			align *= 2
		}
		var starts []int
		for start := 0; start+s.slices <= gi.Slices; start += align {
			starts = append(starts, start)
		}
		p := CIProfile{ID: s.id, Slices: s.slices, Instances: len(starts), Starts: starts,
			Name: fmt.Sprintf("%dc.%s", s.slices, gi.Name), SMs: s.slices * t.SMsPerSlice}
		if s.slices == gi.Slices {
			p.Name, p.SMs = gi.Name, gi.SMs
		}
		out = append(out, p)
	}
	return out
}

// GIID is the GPU instance id NVML assigns to a GI at placement start:size
// on a GPU with eight memory slices. The id depends on the placement only,
// like the driver's memory "swizzle" ids: the whole GPU is 0, the halves
// 1 (4:4) and 2 (0:4), the quarters 3..6 (4:2, 6:2, 0:2, 2:2) and the
// eighths 7..14 (4..7, then 0..3) — the upper half first at every level.
// Observed on real GPUs: 3g/4g at 4:4 is GI 1 and at 0:4 GI 2; seven 1g GIs
// are GIs 7, 8, 9, 11, 12, 13, 14 (10 is start 7, which no 1g profile may
// use). The quarter ids follow the same rule but were not observed.
func GIID(start, size int) (int, bool) {
	switch size {
	case 1, 2, 4, 8:
	default:
		return 0, false
	}
	if start < 0 || start%size != 0 || start+size > MIGMemorySlices {
		return 0, false
	}
	return MIGMemorySlices/size - 1 + (start^4)/size, true
}

// Profile IDs as `nvidia-smi mig -lgip` shows them; the same on every model
// below.
const (
	giID1g    = 19 // 1 compute, 1 memory slice
	giID1gME  = 20 // 1g with all media extensions (+me)
	giID1g2m  = 15 // 1 compute, 2 memory slices (1g.10gb on A100-40GB)
	giID2g    = 14
	giID3g    = 9
	giID4g    = 5
	giID7g    = 0
	nvmlIdx1  = 0 // NVML_GPU_INSTANCE_PROFILE_1_SLICE
	nvmlIdx2  = 1
	nvmlIdx3  = 2
	nvmlIdx4  = 3
	nvmlIdx7  = 4
	nvmlIdxME = 7 // 1_SLICE_REV1
	nvmlIdx1R = 9 // 1_SLICE_REV2
)

var (
	starts1g   = []int{0, 1, 2, 3, 4, 5, 6}
	starts2mem = []int{0, 2, 4, 6}
	starts2g   = []int{0, 2, 4}
	starts3g   = []int{0, 4}
	starts0    = []int{0}
)

// migEngines are a profile's SMs and engines: SM, CE, DEC, ENC, JPEG, OFA.
type migEngines [6]int

// giTable builds a model's seven GI profiles from the per-profile memory
// sizes (1g, 1g with 2 memory slices, 2g, 3g, 4g, 7g; +me has the 1g size)
// and engine counts, in the order 1g, 1g+me, 1g-2m, 2g, 3g, 4g, 7g.
func giTable(names [7]string, mem [7]uint64, eng [7]migEngines) []GIProfile {
	shape := [7]struct {
		id, index, slices, memSlices, instances int
		starts                                  []int
	}{
		{giID1g, nvmlIdx1, 1, 1, 7, starts1g},
		{giID1gME, nvmlIdxME, 1, 1, 1, starts1g},
		{giID1g2m, nvmlIdx1R, 1, 2, 4, starts2mem},
		{giID2g, nvmlIdx2, 2, 2, 3, starts2g},
		{giID3g, nvmlIdx3, 3, 4, 2, starts3g},
		{giID4g, nvmlIdx4, 4, 4, 1, starts0},
		{giID7g, nvmlIdx7, 7, 8, 1, starts0},
	}
	out := make([]GIProfile, 7)
	for i, s := range shape {
		e := eng[i]
		out[i] = GIProfile{ID: s.id, Index: s.index, Name: names[i], Slices: s.slices, MemorySlices: s.memSlices,
			Instances: s.instances, MemoryMB: mem[i], SMs: e[0], CopyEngines: e[1], Decoders: e[2],
			Encoders: e[3], JPEGs: e[4], OFAs: e[5], Starts: s.starts}
	}
	// NVML lists profiles by index.
	slices.SortStableFunc(out, func(a, b GIProfile) int { return a.Index - b.Index })
	return out
}

// Ampere engine counts per the MIG user guide's A100 table ("Supported MIG
// Profiles") and `nvidia-smi mig -lgip` on A100-40GB and A100-80GB:
// 1g 0 NVDEC; 1g+me 1 NVDEC/1 JPEG/1 OFA; 1g with 2 memory slices and 2g 1
// NVDEC; 3g and 4g 2; 7g 5 NVDEC/1 JPEG/1 OFA; one copy engine per compute
// slice; 14 SMs per slice. (One published A100-80GB listing from a newer
// driver shows more decoders on 2g/3g/4g; the guide's values are used.)
var ampereEngines = [7]migEngines{
	{14, 1, 0, 0, 0, 0},
	{14, 1, 1, 0, 1, 1},
	{14, 1, 1, 0, 0, 0},
	{28, 2, 1, 0, 0, 0},
	{42, 3, 2, 0, 0, 0},
	{56, 4, 2, 0, 0, 0},
	{98, 7, 5, 0, 1, 1},
}

// Hopper (H100 SXM5, 132 SMs) engine counts from `nvidia-smi mig -lgip` on
// an H100 80GB HBM3 (two published listings agree). The H200 entry reuses
// them (same GH100 die and SM count).
var hopperEngines = [7]migEngines{
	{16, 1, 1, 0, 1, 0},
	{16, 1, 1, 0, 1, 1},
	{26, 1, 1, 0, 1, 0},
	{32, 2, 2, 0, 2, 0},
	{60, 3, 3, 0, 3, 0},
	{64, 4, 4, 0, 4, 0},
	{132, 8, 7, 0, 7, 1},
}

// migTables are the catalogue models' MIG tables. Memory sizes are
// memorySizeMB; nvidia-smi prints them in GiB with two decimals.
//
//   - A100-SXM4-40GB: 4864 (4.75 GiB), 9856 (9.62), 19968 (19.50), 40192
//     (39.25) — the MIG user guide's -lgip example and the go-nvml mock agree.
//   - A100-SXM4-80GB: 9728 (9.50), 19968 (19.50), 40192 (39.25), 80896
//     (79.00) — two published -lgip listings agree (the go-nvml mock's
//     values differ slightly and are not used).
//   - H100-80GB-HBM3: 9984 (9.75), 20096 (19.62), 40448 (39.50), 81152
//     (79.25) — two published -lgip listings agree; an H100 MIG device
//     reports 9984MiB.
//   - H200-141GB-HBM3e: UNVERIFIED. Profile names are NVIDIA's (1g.18gb …
//     7g.141gb); 16384, 33280 and 143360 MiB for 1g, 2g and 7g come from a
//     single -lgip fixture, the 3g/4g size 66560 is chosen so that go-nvlib's
//     name rounding yields "71gb". Engine counts are H100 SXM's.
//
// Placements for all models are the A100's (1g 0..6 size 1, 1g with two
// memory slices 0/2/4/6 size 2, 2g 0/2/4 size 2, 3g 0/4 size 4, 4g 0 size 4,
// 7g 0 size 8). For A100 the guide and observed GIs (3g at 4:4 and 0:4)
// confirm them; for H100 and H200 they are assumed identical (both have
// eight memory slices; the go-nvml mock's H100 sizes 3 and 7 for 3g and 7g
// contradict the eight-slice geometry and are not used).
var migTables = map[string]*MIGTable{
	"A100-SXM4-40GB": {SMsPerSlice: 14, GIProfiles: giTable(
		[7]string{"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
		[7]uint64{4864, 4864, 9856, 9856, 19968, 19968, 40192}, ampereEngines)},
	"A100-SXM4-80GB": {SMsPerSlice: 14, GIProfiles: giTable(
		[7]string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
		[7]uint64{9728, 9728, 19968, 19968, 40192, 40192, 80896}, ampereEngines)},
	"H100-80GB-HBM3": {SMsPerSlice: 16, GIProfiles: giTable(
		[7]string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
		[7]uint64{9984, 9984, 20096, 20096, 40448, 40448, 81152}, hopperEngines)},
	"H200-141GB-HBM3e": {SMsPerSlice: 16, GIProfiles: giTable(
		[7]string{"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
		[7]uint64{16384, 16384, 33280, 33280, 66560, 66560, 143360}, hopperEngines)},
}

// LookupMIGTable returns the MIG table of the catalogue model called model.
func LookupMIGTable(model string) (*MIGTable, bool) {
	t, ok := migTables[model]
	return t, ok
}
