package gpu

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/emulator/internal/fielderr"
)

// Layout names from NVIDIA mig-parted's vocabulary that every MIG model
// accepts, besides all-<GI profile>.
const (
	LayoutAllDisabled = "all-disabled" // MIG mode disabled
	LayoutAllEnabled  = "all-enabled"  // MIG mode enabled, no instances
	LayoutAllBalanced = "all-balanced" // 2×1g, 1×2g, 1×3g (e.g. 2×1g.5gb, 2g.10gb, 3g.20gb)
)

// LayoutNames lists the named layouts the model accepts: all-disabled,
// all-enabled, all-balanced, and all-<profile> for every GI profile, which
// yields as many GIs of that profile as the GPU holds (its instanceCount:
// all-1g.5gb is seven 1g.5gb, all-1g.10gb on A100-40GB four, all-3g.20gb
// two, all-7g.40gb one, all-1g.5gb+me one). all-balanced is mig-parted's
// two 1g, one 2g and one 3g GI of the model's smallest-memory profiles.
func (t *MIGTable) LayoutNames() []string {
	names := []string{LayoutAllDisabled, LayoutAllEnabled, LayoutAllBalanced}
	for _, p := range t.GIProfiles {
		names = append(names, "all-"+p.Name)
	}
	return names
}

// expandLayout returns the GIs a named layout yields, placed by autoPlace.
func (t *MIGTable) expandLayout(name string) ([]MIGInstance, bool) {
	var want []GIProfile
	switch name {
	case LayoutAllDisabled, LayoutAllEnabled:
		return nil, true
	case LayoutAllBalanced:
		for _, pair := range []struct{ index, count int }{{nvmlIdx1, 2}, {nvmlIdx2, 1}, {nvmlIdx3, 1}} {
			i := slices.IndexFunc(t.GIProfiles, func(p GIProfile) bool { return p.Index == pair.index })
			for range pair.count {
				want = append(want, t.GIProfiles[i])
			}
		}
	default:
		i := slices.IndexFunc(t.GIProfiles, func(p GIProfile) bool { return "all-"+p.Name == name })
		if i < 0 {
			return nil, false
		}
		for range t.GIProfiles[i].Instances {
			want = append(want, t.GIProfiles[i])
		}
	}
	return autoPlace(want), true
}

// autoPlace places GIs as the driver does when no placement is given: the
// largest (most memory slices) first, each at the highest free start of its
// profile. (The driver puts a first 3g GI at 4:4 and a first 1g GI at start
// 6.) A GI that does not fit is left out.
func autoPlace(profiles []GIProfile) []MIGInstance {
	slices.SortStableFunc(profiles, func(a, b GIProfile) int { return cmp.Compare(b.MemorySlices, a.MemorySlices) })
	var used [MIGMemorySlices]bool
	var out []MIGInstance
	for _, p := range profiles {
		for i := len(p.Starts) - 1; i >= 0; i-- {
			s := p.Starts[i]
			if slices.Contains(used[s:s+p.MemorySlices], true) {
				continue
			}
			for k := s; k < s+p.MemorySlices; k++ {
				used[k] = true
			}
			out = append(out, MIGInstance{Profile: p.Name, Placement: ptr(s)})
			break
		}
	}
	return out
}

// GPUInstance is a resolved GPU instance of a static layout.
type GPUInstance struct {
	// ID is the GI id (GIID of the placement).
	ID      int
	Profile GIProfile
	// Start is the placement start; the size is Profile.MemorySlices.
	Start            int
	ComputeInstances []ComputeInstance
}

// ComputeInstance is a resolved compute instance; each one is a MIG device.
type ComputeInstance struct {
	// ID is the CI id within its GI: CIs get 0, 1, … in the order the
	// profile lists them (the lowest free id at creation, as NVML assigns
	// them when CIs are created in that order).
	ID      int
	Profile CIProfile
	// Start is the placement start inside the GI; the size is Profile.Slices.
	Start int
}

// MIGLayout returns the static GPU instances of a valid, defaulted GPU,
// ordered by GI id (the order of MIG device handles), or nil when MIG is
// disabled or not configured.
func (g *GPU) MIGLayout() ([]GPUInstance, error) {
	if g.MIG == nil || g.MIG.Mode != MIGEnabled {
		return nil, nil
	}
	t, ok := LookupMIGTable(g.Model)
	if !ok {
		return nil, fmt.Errorf("%w: model %q has no MIG tables", fielderr.ErrInvalid, g.Model)
	}
	gis, errs := resolveMIG(field.NewPath("mig"), t, g.MIG)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %v", fielderr.ErrInvalid, errs.ToAggregate())
	}
	return gis, nil
}

func defaultMIG(m *MIGConfig) {
	if m == nil || m.Mode != "" {
		return
	}
	m.Mode = MIGEnabled
	if m.Layout == LayoutAllDisabled {
		m.Mode = MIGDisabled
	}
}

// validateMIG checks a GPU's MIG configuration.
func validateMIG(path *field.Path, g *GPU) field.ErrorList {
	m := g.MIG
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	switch m.Mode {
	case "":
		errs = append(errs, field.Required(path.Child("mode"), "enabled or disabled"))
	case MIGEnabled, MIGDisabled:
	default:
		errs = append(errs, field.NotSupported(path.Child("mode"), m.Mode, []string{MIGEnabled, MIGDisabled}))
	}
	if g.MIGCapable != nil && !*g.MIGCapable {
		return append(errs, field.Forbidden(path, "the GPU is not MIG capable (migCapable is false)"))
	}
	t, ok := LookupMIGTable(g.Model)
	if !ok {
		var models []string
		for _, name := range Models() {
			if _, ok := migTables[name]; ok {
				models = append(models, name)
			}
		}
		return append(errs, field.Forbidden(path, fmt.Sprintf(
			"model %q has no MIG profile tables; MIG needs one of the models %v", g.Model, models)))
	}
	if m.Layout != "" && len(m.Instances) > 0 {
		return append(errs, field.Forbidden(path.Child("instances"), "set either layout or instances, not both"))
	}
	if m.Layout != "" {
		if _, ok := t.expandLayout(m.Layout); !ok {
			return append(errs, field.NotSupported(path.Child("layout"), m.Layout, t.LayoutNames()))
		}
	}
	hasInstances := len(m.Instances) > 0 || (m.Layout != "" && m.Layout != LayoutAllDisabled && m.Layout != LayoutAllEnabled)
	switch {
	case m.Mode == MIGDisabled && hasInstances:
		errs = append(errs, field.Invalid(path.Child("mode"), m.Mode, "GPU instances need MIG mode enabled"))
	case m.Mode == MIGDisabled && m.Layout == LayoutAllEnabled:
		errs = append(errs, field.Invalid(path.Child("mode"), m.Mode, "layout all-enabled needs MIG mode enabled"))
	case m.Mode == MIGEnabled && m.Layout == LayoutAllDisabled:
		errs = append(errs, field.Invalid(path.Child("layout"), m.Layout, "contradicts mode enabled"))
	}
	_, rerrs := resolveMIG(path, t, m)
	return append(errs, rerrs...)
}

// resolveMIG turns a MIG configuration into GPU instances with ids and
// reports every problem with its field path.
func resolveMIG(path *field.Path, t *MIGTable, m *MIGConfig) ([]GPUInstance, field.ErrorList) {
	instances := m.Instances
	if m.Layout != "" {
		instances, _ = t.expandLayout(m.Layout)
	}
	var errs field.ErrorList
	ip := path.Child("instances")
	var owner [MIGMemorySlices]int // 1 + index of the instance using the memory slice
	perProfile := map[string]int{}
	computeSlices, devices := 0, 0
	var out []GPUInstance
	for j, inst := range instances {
		jp := ip.Index(j)
		gi, ok := t.GIProfile(inst.Profile)
		if !ok {
			errs = append(errs, field.NotSupported(jp.Child("profile"), inst.Profile, t.GIProfileNames()))
			continue
		}
		if perProfile[gi.Name]++; perProfile[gi.Name] > gi.Instances {
			errs = append(errs, field.Invalid(jp.Child("profile"), inst.Profile,
				fmt.Sprintf("at most %d GPU instance(s) of profile %s fit on one GPU", gi.Instances, gi.Name)))
		}
		devices += max(1, len(inst.ComputeInstances))
		pp := jp.Child("placement")
		if inst.Placement == nil {
			errs = append(errs, field.Required(pp, "the start memory slice, one of "+startList(gi.Starts)))
			continue
		}
		start := *inst.Placement
		if !slices.Contains(gi.Starts, start) {
			errs = append(errs, field.NotSupported(pp, start, startStrings(gi.Starts)))
			continue
		}
		overlap := false
		for k := start; k < start+gi.MemorySlices; k++ {
			if owner[k] != 0 && !overlap {
				other := instances[owner[k]-1]
				errs = append(errs, field.Invalid(pp, start, fmt.Sprintf(
					"memory slices %d..%d overlap %s (%s at %d)", start, start+gi.MemorySlices-1,
					ip.Index(owner[k]-1), other.Profile, *other.Placement)))
				overlap = true
			}
		}
		if overlap {
			continue
		}
		for k := start; k < start+gi.MemorySlices; k++ {
			owner[k] = j + 1
		}
		computeSlices += gi.Slices
		id, _ := GIID(start, gi.MemorySlices)
		res := GPUInstance{ID: id, Profile: gi, Start: start}
		cis, cerrs := resolveCIs(jp.Child("computeInstances"), t, gi, inst.ComputeInstances)
		errs = append(errs, cerrs...)
		res.ComputeInstances = cis
		out = append(out, res)
	}
	if computeSlices > MIGComputeSlices {
		errs = append(errs, field.Invalid(ip, computeSlices,
			fmt.Sprintf("the GPU instances need %d compute slices; the GPU has %d", computeSlices, MIGComputeSlices)))
	}
	if devices > MaxMIGDevices {
		errs = append(errs, fielderr.WithDetail(field.TooMany(ip, devices, MaxMIGDevices),
			"compute instances (MIG devices) on one GPU"))
	}
	slices.SortFunc(out, func(a, b GPUInstance) int { return cmp.Compare(a.ID, b.ID) })
	return out, errs
}

func resolveCIs(path *field.Path, t *MIGTable, gi GIProfile, cis []MIGComputeInstance) ([]ComputeInstance, field.ErrorList) {
	profiles := t.CIProfiles(gi)
	if len(cis) == 0 {
		full := profiles[len(profiles)-1]
		return []ComputeInstance{{ID: 0, Profile: full, Start: 0}}, nil
	}
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.Name
	}
	var errs field.ErrorList
	var owner [MIGComputeSlices]int
	var out []ComputeInstance
	for j, ci := range cis {
		jp := path.Index(j)
		i := slices.IndexFunc(profiles, func(p CIProfile) bool { return p.Name == ci.Profile })
		if i < 0 {
			errs = append(errs, field.NotSupported(jp.Child("profile"), ci.Profile, names))
			continue
		}
		p := profiles[i]
		pp := jp.Child("placement")
		if ci.Placement == nil {
			errs = append(errs, field.Required(pp, "the start compute slice, one of "+startList(p.Starts)))
			continue
		}
		start := *ci.Placement
		if !slices.Contains(p.Starts, start) {
			errs = append(errs, field.NotSupported(pp, start, startStrings(p.Starts)))
			continue
		}
		if k := slices.IndexFunc(owner[start:start+p.Slices], func(o int) bool { return o != 0 }); k >= 0 {
			errs = append(errs, field.Invalid(pp, start, fmt.Sprintf("compute slices %d..%d overlap %s",
				start, start+p.Slices-1, path.Index(owner[start+k]-1))))
			continue
		}
		for k := start; k < start+p.Slices; k++ {
			owner[k] = j + 1
		}
		out = append(out, ComputeInstance{ID: len(out), Profile: p, Start: start})
	}
	return out, errs
}

func startStrings(starts []int) []string {
	out := make([]string, len(starts))
	for i, s := range starts {
		out[i] = strconv.Itoa(s)
	}
	return out
}

func startList(starts []int) string { return fmt.Sprint(starts) }
