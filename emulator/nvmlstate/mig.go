package nvmlstate

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"drakit.dev/drakit/internal/nvidiahw"
)

// Capability minors of /dev/nvidia-caps/nvidia-cap<minor>, as the NVIDIA
// driver numbers them in /proc/driver/nvidia-caps/mig-minors: config 1,
// monitor 2, then per GPU minor g 135 entries (15 GIs × (1 + 8 CIs)).
// They forward to package nvidiahw, which states the numbering once for
// the emulator and the conformance kit.
const (
	ConfigCapMinor  = nvidiahw.ConfigCapMinor
	MonitorCapMinor = nvidiahw.MonitorCapMinor
	// MaxGIID and MaxCIID bound GI ids (0..14) and CI ids (0..7).
	MaxGIID = nvidiahw.MaxGIID
	MaxCIID = nvidiahw.MaxCIID
)

// GIAccessMinor is the minor of gpu<gpu>/gi<gi>/access: 3 + gpu·135 + gi·9
// (nvidiahw.GIAccessMinor).
func GIAccessMinor(gpu, gi int) int { return nvidiahw.GIAccessMinor(gpu, gi) }

// CIAccessMinor is the minor of gpu<gpu>/gi<gi>/ci<ci>/access:
// GIAccessMinor + 1 + ci (nvidiahw.CIAccessMinor).
func CIAccessMinor(gpu, gi, ci int) int { return nvidiahw.CIAccessMinor(gpu, gi, ci) }

// MIG is a "mig" record: a MIG-capable GPU's MIG geometry. A GPU without one
// has no MIG profiles (the shim answers NOT_SUPPORTED).
type MIG struct {
	GPU          int // minor of the gpu record
	MaxDevices   int // nvmlDeviceGetMaxMigDeviceCount, 1..7
	MemorySlices int // memory slices placements address, 1..8
}

// GIProfile is a "giprofile" record: nvmlGpuInstanceProfileInfo_t plus the
// possible placements of one GI profile of one GPU.
type GIProfile struct {
	GPU          int
	ID           int // driver profile ID (info.id; create/placement calls take it)
	Index        int // NVML_GPU_INSTANCE_PROFILE_* that GetGpuInstanceProfileInfo takes
	Name         string
	Slices       int // sliceCount (compute slices)
	MemorySlices int // placement size
	Instances    int // instanceCount
	MemoryMB     uint64
	SMs          int
	CopyEngines  int
	Decoders     int
	Encoders     int
	JPEGs        int
	OFAs         int
	P2P          bool  // isP2pSupported
	Placements   []int // starts, ascending; each placement is start:MemorySlices
}

// CIProfile is a "ciprofile" record: nvmlComputeInstanceProfileInfo_t plus
// the placements of one CI profile inside GIs of one GI profile. Its shared
// engine counts are the GI profile's.
type CIProfile struct {
	GPU        int
	GIProfile  int // GI profile ID
	ID         int // NVML_COMPUTE_INSTANCE_PROFILE_*
	Name       string
	Slices     int
	Instances  int
	SMs        int
	Placements []int // starts inside the GI, ascending; size Slices
}

// GPUInstance is a "gi" record: an existing GPU instance.
type GPUInstance struct {
	GPU      int
	ID       int // 0..14
	Profile  int // GI profile ID
	Start    int
	Size     int // the profile's MemorySlices
	CapMinor int // GIAccessMinor(GPU, ID)
}

// ComputeInstance is a "ci" record: an existing compute instance, which is a
// MIG device.
type ComputeInstance struct {
	GPU      int
	GI       int // GI id
	ID       int // 0..7
	Profile  int // CI profile ID
	Start    int
	Size     int // the profile's Slices
	UUID     string
	CapMinor int // CIAccessMinor(GPU, GI, ID)
}

var migUUIDPattern = regexp.MustCompile(`^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func parseMIGRecord(s *State, kind string, fp *fieldParser) {
	switch kind {
	case "mig":
		s.MIG = append(s.MIG, MIG{
			GPU: int(fp.int("gpu")), MaxDevices: int(fp.int("maxDevices")), MemorySlices: int(fp.int("memorySlices")),
		})
	case "giprofile":
		s.GIProfiles = append(s.GIProfiles, GIProfile{
			GPU: int(fp.int("gpu")), ID: int(fp.int("id")), Index: int(fp.int("index")), Name: fp.str("name"),
			Slices: int(fp.int("slices")), MemorySlices: int(fp.int("memorySlices")),
			Instances: int(fp.int("instances")), MemoryMB: fp.uint("memoryMB", 64), SMs: int(fp.int("sms")),
			CopyEngines: int(fp.int("copyEngines")), Decoders: int(fp.int("decoders")),
			Encoders: int(fp.int("encoders")), JPEGs: int(fp.int("jpegs")), OFAs: int(fp.int("ofas")),
			P2P: fp.flag("p2p"), Placements: fp.list("placements"),
		})
	case "ciprofile":
		s.CIProfiles = append(s.CIProfiles, CIProfile{
			GPU: int(fp.int("gpu")), GIProfile: int(fp.int("giProfile")), ID: int(fp.int("id")), Name: fp.str("name"),
			Slices: int(fp.int("slices")), Instances: int(fp.int("instances")), SMs: int(fp.int("sms")),
			Placements: fp.list("placements"),
		})
	case "gi":
		s.GPUInstances = append(s.GPUInstances, GPUInstance{
			GPU: int(fp.int("gpu")), ID: int(fp.int("id")), Profile: int(fp.int("profile")),
			Start: int(fp.int("start")), Size: int(fp.int("size")), CapMinor: int(fp.int("capMinor")),
		})
	case "ci":
		s.ComputeInstances = append(s.ComputeInstances, ComputeInstance{
			GPU: int(fp.int("gpu")), GI: int(fp.int("gi")), ID: int(fp.int("id")), Profile: int(fp.int("profile")),
			Start: int(fp.int("start")), Size: int(fp.int("size")), UUID: fp.str("uuid"),
			CapMinor: int(fp.int("capMinor")),
		})
	}
}

// list reads a comma-separated list of one or more non-negative 32-bit
// integers.
func (p *fieldParser) list(key string) []int {
	v := p.str(key)
	if p.err != nil {
		return nil
	}
	var out []int
	for _, e := range strings.Split(v, ",") {
		n, err := parseUint(e, 31)
		if err != nil || e == "" {
			p.err = fmt.Errorf("%w: line %d: field %s=%q is not a comma-separated list of integers", ErrInvalid, p.line, key, v)
			return nil
		}
		out = append(out, int(n))
	}
	return out
}

func writeMIG(b *strings.Builder, s *State) {
	for _, m := range s.MIG {
		fmt.Fprintf(b, "mig\tgpu=%d\tmaxDevices=%d\tmemorySlices=%d\n", m.GPU, m.MaxDevices, m.MemorySlices)
	}
	for _, p := range s.GIProfiles {
		fmt.Fprintf(b, "giprofile\tgpu=%d\tid=%d\tindex=%d\tname=%s\tslices=%d\tmemorySlices=%d\tinstances=%d"+
			"\tmemoryMB=%d\tsms=%d\tcopyEngines=%d\tdecoders=%d\tencoders=%d\tjpegs=%d\tofas=%d\tp2p=%d\tplacements=%s\n",
			p.GPU, p.ID, p.Index, p.Name, p.Slices, p.MemorySlices, p.Instances, p.MemoryMB, p.SMs,
			p.CopyEngines, p.Decoders, p.Encoders, p.JPEGs, p.OFAs, boolInt(p.P2P), joinInts(p.Placements))
	}
	for _, p := range s.CIProfiles {
		fmt.Fprintf(b, "ciprofile\tgpu=%d\tgiProfile=%d\tid=%d\tname=%s\tslices=%d\tinstances=%d\tsms=%d\tplacements=%s\n",
			p.GPU, p.GIProfile, p.ID, p.Name, p.Slices, p.Instances, p.SMs, joinInts(p.Placements))
	}
	for _, g := range s.GPUInstances {
		fmt.Fprintf(b, "gi\tgpu=%d\tid=%d\tprofile=%d\tstart=%d\tsize=%d\tcapMinor=%d\n",
			g.GPU, g.ID, g.Profile, g.Start, g.Size, g.CapMinor)
	}
	for _, c := range s.ComputeInstances {
		fmt.Fprintf(b, "ci\tgpu=%d\tgi=%d\tid=%d\tprofile=%d\tstart=%d\tsize=%d\tuuid=%s\tcapMinor=%d\n",
			c.GPU, c.GI, c.ID, c.Profile, c.Start, c.Size, c.UUID, c.CapMinor)
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// validPlacements reports whether starts is non-empty, strictly ascending and
// every start:size lies in 0..limit-1.
func validPlacements(starts []int, size, limit int) bool {
	if len(starts) == 0 || size < 1 {
		return false
	}
	for i, st := range starts {
		if st < 0 || st+size > limit || (i > 0 && st <= starts[i-1]) {
			return false
		}
	}
	return true
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// validateMIG checks the MIG records against each other and the gpu records.
func (s *State) validateMIG() error {
	gpus := map[int]*GPU{}
	for i := range s.GPUs {
		gpus[s.GPUs[i].Minor] = &s.GPUs[i]
	}
	migs := map[int]MIG{}
	for i, m := range s.MIG {
		where := fmt.Sprintf("mig[%d]", i)
		g, ok := gpus[m.GPU]
		_, dup := migs[m.GPU]
		switch {
		case !ok:
			return invalid("%s.gpu %d: no gpu record with that minor", where, m.GPU)
		case !g.MIGCapable:
			return invalid("%s.gpu %d: the GPU is not MIG capable", where, m.GPU)
		case dup:
			return invalid("%s.gpu %d: second mig record for the GPU", where, m.GPU)
		case m.MaxDevices < 1 || m.MaxDevices > MaxCIID+1:
			return invalid("%s.maxDevices %d out of range 1..8", where, m.MaxDevices)
		case m.MemorySlices < 1 || m.MemorySlices > 8:
			return invalid("%s.memorySlices %d out of range 1..8", where, m.MemorySlices)
		}
		migs[m.GPU] = m
	}
	type key struct{ gpu, id int }
	giProfiles := map[key]GIProfile{}
	indexes := map[key]bool{}
	for i, p := range s.GIProfiles {
		where := fmt.Sprintf("giprofile[%d]", i)
		m, ok := migs[p.GPU]
		_, dup := giProfiles[key{p.GPU, p.ID}]
		switch {
		case !ok:
			return invalid("%s.gpu %d: no mig record for the GPU", where, p.GPU)
		case p.ID < 0:
			return invalid("%s.id %d is negative", where, p.ID)
		case dup:
			return invalid("%s.id %d used twice on gpu %d", where, p.ID, p.GPU)
		case p.Index < 0 || indexes[key{p.GPU, p.Index}]:
			return invalid("%s.index %d negative or used twice on gpu %d", where, p.Index, p.GPU)
		case p.Name == "" || len(p.Name) >= 96 || strings.ContainsAny(p.Name, "\t\n"):
			return invalid("%s.name %q must be 1..95 characters without tab or newline", where, p.Name)
		case p.Slices < 1 || p.MemorySlices < 1 || p.MemorySlices > m.MemorySlices:
			return invalid("%s: slices %d and memorySlices %d must be 1..%d", where, p.Slices, p.MemorySlices, m.MemorySlices)
		case !validPlacements(p.Placements, p.MemorySlices, m.MemorySlices):
			return invalid("%s.placements %v must be ascending starts with start+%d <= %d", where, p.Placements, p.MemorySlices, m.MemorySlices)
		case p.Instances < 1 || p.Instances > len(p.Placements):
			return invalid("%s.instances %d must be 1..%d (the number of placements)", where, p.Instances, len(p.Placements))
		case p.MemoryMB == 0:
			return invalid("%s.memoryMB must be positive", where)
		case !fitsInt32(p.SMs, p.CopyEngines, p.Decoders, p.Encoders, p.JPEGs, p.OFAs) ||
			min(p.SMs, p.CopyEngines, p.Decoders, p.Encoders, p.JPEGs, p.OFAs) < 0:
			return invalid("%s: engine counts must be non-negative", where)
		}
		giProfiles[key{p.GPU, p.ID}] = p
		indexes[key{p.GPU, p.Index}] = true
	}
	type ciKey struct{ gpu, giProfile, id int }
	ciProfiles := map[ciKey]CIProfile{}
	for i, p := range s.CIProfiles {
		where := fmt.Sprintf("ciprofile[%d]", i)
		gp, ok := giProfiles[key{p.GPU, p.GIProfile}]
		_, dup := ciProfiles[ciKey{p.GPU, p.GIProfile, p.ID}]
		switch {
		case !ok:
			return invalid("%s: no giprofile %d on gpu %d", where, p.GIProfile, p.GPU)
		case p.ID < 0 || dup:
			return invalid("%s.id %d negative or used twice for giprofile %d on gpu %d", where, p.ID, p.GIProfile, p.GPU)
		case p.Name == "" || len(p.Name) >= 96 || strings.ContainsAny(p.Name, "\t\n"):
			return invalid("%s.name %q must be 1..95 characters without tab or newline", where, p.Name)
		case p.Slices < 1 || p.Slices > gp.Slices:
			return invalid("%s.slices %d must be 1..%d (the GI profile's slices)", where, p.Slices, gp.Slices)
		case !validPlacements(p.Placements, p.Slices, gp.Slices):
			return invalid("%s.placements %v must be ascending starts with start+%d <= %d", where, p.Placements, p.Slices, gp.Slices)
		case p.Instances < 1 || p.Instances > len(p.Placements):
			return invalid("%s.instances %d must be 1..%d (the number of placements)", where, p.Instances, len(p.Placements))
		case p.SMs < 0:
			return invalid("%s.sms must be non-negative", where)
		}
		ciProfiles[ciKey{p.GPU, p.GIProfile, p.ID}] = p
	}
	gis := map[key]GPUInstance{}
	used := map[int][]bool{} // memory slices in use per GPU
	for i, g := range s.GPUInstances {
		where := fmt.Sprintf("gi[%d]", i)
		p, ok := giProfiles[key{g.GPU, g.Profile}]
		_, dup := gis[key{g.GPU, g.ID}]
		switch {
		case !ok:
			return invalid("%s: no giprofile %d on gpu %d", where, g.Profile, g.GPU)
		case gpus[g.GPU].MIGMode != 1:
			return invalid("%s: gpu %d has migMode 0", where, g.GPU)
		case g.ID < 0 || g.ID > MaxGIID:
			return invalid("%s.id %d out of range 0..%d", where, g.ID, MaxGIID)
		case dup:
			return invalid("%s.id %d used twice on gpu %d", where, g.ID, g.GPU)
		case !slices.Contains(p.Placements, g.Start) || g.Size != p.MemorySlices:
			return invalid("%s: placement %d:%d is not one of giprofile %d's (%v, size %d)",
				where, g.Start, g.Size, g.Profile, p.Placements, p.MemorySlices)
		case g.CapMinor != GIAccessMinor(g.GPU, g.ID):
			return invalid("%s.capMinor %d, want %d", where, g.CapMinor, GIAccessMinor(g.GPU, g.ID))
		}
		u := used[g.GPU]
		if u == nil {
			u = make([]bool, migs[g.GPU].MemorySlices)
			used[g.GPU] = u
		}
		if slices.Contains(u[g.Start:g.Start+g.Size], true) {
			return invalid("%s: placement %d:%d overlaps another GI on gpu %d", where, g.Start, g.Size, g.GPU)
		}
		for k := g.Start; k < g.Start+g.Size; k++ {
			u[k] = true
		}
		gis[key{g.GPU, g.ID}] = g
	}
	type ciID struct{ gpu, gi, id int }
	cis := map[ciID]bool{}
	ciUsed := map[key][]bool{}
	devices := map[int]int{}
	uuids := map[string]bool{}
	for i, c := range s.ComputeInstances {
		where := fmt.Sprintf("ci[%d]", i)
		g, ok := gis[key{c.GPU, c.GI}]
		if !ok {
			return invalid("%s: no gi %d on gpu %d", where, c.GI, c.GPU)
		}
		gp := giProfiles[key{c.GPU, g.Profile}]
		p, ok := ciProfiles[ciKey{c.GPU, g.Profile, c.Profile}]
		switch {
		case !ok:
			return invalid("%s: no ciprofile %d for giprofile %d on gpu %d", where, c.Profile, g.Profile, c.GPU)
		case c.ID < 0 || c.ID > MaxCIID || cis[ciID{c.GPU, c.GI, c.ID}]:
			return invalid("%s.id %d out of range 0..%d or used twice in gi %d", where, c.ID, MaxCIID, c.GI)
		case !slices.Contains(p.Placements, c.Start) || c.Size != p.Slices:
			return invalid("%s: placement %d:%d is not one of ciprofile %d's (%v, size %d)",
				where, c.Start, c.Size, c.Profile, p.Placements, p.Slices)
		case !migUUIDPattern.MatchString(c.UUID):
			return invalid("%s.uuid %q is not MIG-<uuid>", where, c.UUID)
		case uuids[c.UUID]:
			return invalid("%s.uuid %q used twice", where, c.UUID)
		case c.CapMinor != CIAccessMinor(c.GPU, c.GI, c.ID):
			return invalid("%s.capMinor %d, want %d", where, c.CapMinor, CIAccessMinor(c.GPU, c.GI, c.ID))
		}
		u := ciUsed[key{c.GPU, c.GI}]
		if u == nil {
			u = make([]bool, gp.Slices)
			ciUsed[key{c.GPU, c.GI}] = u
		}
		if slices.Contains(u[c.Start:c.Start+c.Size], true) {
			return invalid("%s: placement %d:%d overlaps another CI in gi %d", where, c.Start, c.Size, c.GI)
		}
		for k := c.Start; k < c.Start+c.Size; k++ {
			u[k] = true
		}
		if devices[c.GPU]++; devices[c.GPU] > migs[c.GPU].MaxDevices {
			return invalid("%s: more than %d MIG devices on gpu %d", where, migs[c.GPU].MaxDevices, c.GPU)
		}
		cis[ciID{c.GPU, c.GI, c.ID}] = true
		uuids[c.UUID] = true
	}
	return nil
}
