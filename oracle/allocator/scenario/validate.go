package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"
	"k8s.io/utils/ptr"
)

// Default fills in what the API server would default and the allocators
// rely on: apiVersion and kind when empty, and in every request and
// subrequest of Claims and AllocatedClaims allocationMode ExactCount and,
// for ExactCount, count 1.
func (s *Scenario) Default() {
	if s.APIVersion == "" {
		s.APIVersion = APIVersion
	}
	if s.Kind == "" {
		s.Kind = Kind
	}
	for _, claims := range [][]*resourceapi.ResourceClaim{s.Claims, s.AllocatedClaims} {
		for _, c := range claims {
			if c == nil {
				continue
			}
			for i := range c.Spec.Devices.Requests {
				r := &c.Spec.Devices.Requests[i]
				if r.Exactly != nil {
					defaultMode(&r.Exactly.AllocationMode, &r.Exactly.Count)
				}
				for j := range r.FirstAvailable {
					defaultMode(&r.FirstAvailable[j].AllocationMode, &r.FirstAvailable[j].Count)
				}
			}
		}
	}
}

func defaultMode(mode *resourceapi.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourceapi.DeviceAllocationModeExactCount
	}
	if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

// Validate checks that s is complete and consistent enough to allocate:
// apiVersion and kind, a named node, named and unique classes, slices,
// claims and requests, class references that resolve, CEL selectors that
// compile, slices with a driver, a pool and exactly one node-selection
// field, unique device names and well-formed attributes, counter
// consumption that names counter sets of the pool, the API's size limits
// (limits.go), and allocated claims whose status.allocation holds devices
// consistently (validateAllocatedDevices). It does not re-implement every
// API validation rule (name formats, for one); the allocators reject the
// rest as invalid input. Call Default first: Validate expects
// allocationMode and count set.
func (s *Scenario) Validate() field.ErrorList {
	var errs field.ErrorList
	if s.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), s.APIVersion, []string{APIVersion}))
	}
	if s.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), s.Kind, []string{Kind}))
	}
	if s.Node == nil {
		errs = append(errs, field.Required(field.NewPath("node"), "the node to allocate on"))
	} else if s.Node.Name == "" {
		errs = append(errs, field.Required(field.NewPath("node", "metadata", "name"), ""))
	}
	celCheck := newCELChecker(s.Features.CEL())

	classes := sets.New[string]()
	for i, c := range s.DeviceClasses {
		p := field.NewPath("deviceClasses").Index(i)
		switch {
		case c == nil:
			errs = append(errs, field.Required(p, "a DeviceClass"))
			continue
		case c.Name == "":
			errs = append(errs, field.Required(p.Child("metadata", "name"), ""))
		case classes.Has(c.Name):
			errs = append(errs, field.Duplicate(p.Child("metadata", "name"), c.Name))
		}
		classes.Insert(c.Name)
		errs = append(errs, classLimits(p.Child("spec"), &c.Spec)...)
		errs = append(errs, validateSelectors(p.Child("spec", "selectors"), c.Spec.Selectors, celCheck)...)
	}

	errs = append(errs, s.validateSlices()...)

	claimNames := sets.New[string]()
	for _, list := range []struct {
		name      string
		claims    []*resourceapi.ResourceClaim
		allocated bool
	}{{"allocatedClaims", s.AllocatedClaims, true}, {"claims", s.Claims, false}} {
		for i, c := range list.claims {
			p := field.NewPath(list.name).Index(i)
			if c == nil {
				errs = append(errs, field.Required(p, "a ResourceClaim"))
				continue
			}
			id := c.Namespace + "/" + c.Name
			switch {
			case c.Name == "":
				errs = append(errs, field.Required(p.Child("metadata", "name"), ""))
			case claimNames.Has(id):
				errs = append(errs, field.Duplicate(p.Child("metadata", "name"), c.Name))
			}
			claimNames.Insert(id)
			errs = append(errs, claimLimits(p.Child("spec", "devices"), &c.Spec.Devices)...)
			if list.allocated {
				errs = append(errs, validateAllocation(p.Child("status", "allocation"), c.Status.Allocation)...)
			} else {
				if c.Status.Allocation != nil {
					errs = append(errs, field.Forbidden(p.Child("status", "allocation"), "a claim to allocate must not be allocated; list it under allocatedClaims"))
				}
				errs = append(errs, validateClaimSpec(p.Child("spec", "devices"), &c.Spec.Devices, classes, celCheck)...)
			}
		}
	}
	return append(errs, s.validateAllocatedDevices()...)
}

// celCheckers holds one celChecker per CEL environment feature set, for
// the life of the process: cel.GetCompiler keeps only the most recent
// compiler, and building one, or compiling an expression with cost
// estimation, takes far longer than the rest of Validate.
var celCheckers sync.Map // cel.Features → *celChecker

type celCompiler interface {
	CompileCELExpression(expression string, options cel.Options) cel.CompilationResult
}

// celChecker compiles selectors as the API server validates them: in the
// environment for new expressions, with cost estimation, remembering the
// results of the most recent expressions. It is safe for concurrent use.
type celChecker struct {
	compiler celCompiler
	results  *lru.Cache // expression → cel.CompilationResult
}

// celResultsCached is how many compilation results a celChecker keeps.
const celResultsCached = 256

func newCELChecker(f cel.Features) *celChecker {
	if c, ok := celCheckers.Load(f); ok {
		return c.(*celChecker)
	}
	c, _ := celCheckers.LoadOrStore(f, &celChecker{compiler: cel.GetCompiler(f), results: lru.New(celResultsCached)})
	return c.(*celChecker)
}

func (c *celChecker) compile(expression string) cel.CompilationResult {
	if r, ok := c.results.Get(expression); ok {
		return r.(cel.CompilationResult)
	}
	env := environment.NewExpressions
	r := c.compiler.CompileCELExpression(expression, cel.Options{EnvType: &env})
	c.results.Add(expression, r)
	return r
}

func validateSelectors(p *field.Path, selectors []resourceapi.DeviceSelector, celCheck *celChecker) field.ErrorList {
	var errs field.ErrorList
	for i, sel := range selectors {
		sp := p.Index(i).Child("cel")
		if sel.CEL == nil {
			errs = append(errs, field.Required(sp, "the only selector kind is cel"))
			continue
		}
		if sel.CEL.Expression == "" {
			errs = append(errs, field.Required(sp.Child("expression"), ""))
			continue
		}
		if len(sel.CEL.Expression) > resourceapi.CELSelectorExpressionMaxLength {
			errs = append(errs, field.TooLong(sp.Child("expression"), "", resourceapi.CELSelectorExpressionMaxLength))
			continue
		}
		switch r := celCheck.compile(sel.CEL.Expression); {
		case r.Error != nil:
			errs = append(errs, field.Invalid(sp.Child("expression"), sel.CEL.Expression, r.Error.Error()))
		case r.MaxCost > resourceapi.CELSelectorExpressionMaxCost:
			errs = append(errs, field.Forbidden(sp.Child("expression"), fmt.Sprintf("too complex: estimated cost %d exceeds the limit of %d", r.MaxCost, resourceapi.CELSelectorExpressionMaxCost)))
		}
	}
	return errs
}

func validateClaimSpec(p *field.Path, spec *resourceapi.DeviceClaim, classes sets.Set[string], celCheck *celChecker) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Requests) == 0 {
		errs = append(errs, field.Required(p.Child("requests"), "at least one request"))
	}
	names := sets.New[string]()
	for i, r := range spec.Requests {
		rp := p.Child("requests").Index(i)
		switch {
		case r.Name == "":
			errs = append(errs, field.Required(rp.Child("name"), ""))
		case names.Has(r.Name):
			errs = append(errs, field.Duplicate(rp.Child("name"), r.Name))
		}
		names.Insert(r.Name)
		switch {
		case r.Exactly == nil && len(r.FirstAvailable) == 0:
			errs = append(errs, field.Required(rp, "exactly one of exactly or firstAvailable"))
		case r.Exactly != nil && len(r.FirstAvailable) > 0:
			errs = append(errs, field.Forbidden(rp.Child("firstAvailable"), "exactly one of exactly or firstAvailable, not both"))
		case r.Exactly != nil:
			e := r.Exactly
			ep := rp.Child("exactly")
			errs = append(errs, validateClass(ep.Child("deviceClassName"), e.DeviceClassName, classes)...)
			errs = append(errs, validateSelectors(ep.Child("selectors"), e.Selectors, celCheck)...)
			errs = append(errs, validateMode(ep, e.AllocationMode, e.Count)...)
		default:
			subNames := sets.New[string]()
			for j, sr := range r.FirstAvailable {
				sp := rp.Child("firstAvailable").Index(j)
				switch {
				case sr.Name == "":
					errs = append(errs, field.Required(sp.Child("name"), ""))
				case subNames.Has(sr.Name):
					errs = append(errs, field.Duplicate(sp.Child("name"), sr.Name))
				}
				subNames.Insert(sr.Name)
				errs = append(errs, validateClass(sp.Child("deviceClassName"), sr.DeviceClassName, classes)...)
				errs = append(errs, validateSelectors(sp.Child("selectors"), sr.Selectors, celCheck)...)
				errs = append(errs, validateMode(sp, sr.AllocationMode, sr.Count)...)
			}
		}
	}
	for i, c := range spec.Constraints {
		cp := p.Child("constraints").Index(i)
		if (c.MatchAttribute == nil) == (c.DistinctAttribute == nil) {
			errs = append(errs, field.Required(cp, "exactly one of matchAttribute or distinctAttribute"))
		}
		for j, name := range c.Requests {
			parent, _, _ := strings.Cut(name, "/")
			if !names.Has(parent) {
				errs = append(errs, field.NotFound(cp.Child("requests").Index(j), name))
			}
		}
	}
	return errs
}

func validateClass(p *field.Path, name string, classes sets.Set[string]) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, "")}
	case !classes.Has(name):
		return field.ErrorList{field.NotFound(p, name)}
	}
	return nil
}

func validateMode(p *field.Path, mode resourceapi.DeviceAllocationMode, count int64) field.ErrorList {
	switch mode {
	case resourceapi.DeviceAllocationModeExactCount:
		if count <= 0 {
			return field.ErrorList{field.Invalid(p.Child("count"), count, "must be at least 1")}
		}
	case resourceapi.DeviceAllocationModeAll:
		if count != 0 {
			return field.ErrorList{field.Invalid(p.Child("count"), count, "must be unset with allocationMode All")}
		}
	default:
		return field.ErrorList{field.NotSupported(p.Child("allocationMode"), mode,
			[]resourceapi.DeviceAllocationMode{resourceapi.DeviceAllocationModeExactCount, resourceapi.DeviceAllocationModeAll})}
	}
	return nil
}

func validateAllocation(p *field.Path, a *resourceapi.AllocationResult) field.ErrorList {
	if a == nil {
		return field.ErrorList{field.Required(p, "an allocated claim needs its allocation: the devices it holds")}
	}
	errs := allocationLimits(p, a)
	for i, r := range a.Devices.Results {
		rp := p.Child("devices", "results").Index(i)
		for _, f := range []struct{ name, value string }{{"request", r.Request}, {"driver", r.Driver}, {"pool", r.Pool}, {"device", r.Device}} {
			if f.value == "" {
				errs = append(errs, field.Required(rp.Child(f.name), ""))
			}
		}
	}
	return errs
}

type poolID struct{ driver, pool string }

func (s *Scenario) validateSlices() field.ErrorList {
	var errs field.ErrorList
	sliceNames := sets.New[string]()
	counterSets := map[poolID]map[string]sets.Set[string]{}
	for _, sl := range s.ResourceSlices {
		if sl == nil {
			continue
		}
		id := poolID{sl.Spec.Driver, sl.Spec.Pool.Name}
		for _, cs := range sl.Spec.SharedCounters {
			if counterSets[id] == nil {
				counterSets[id] = map[string]sets.Set[string]{}
			}
			counterSets[id][cs.Name] = sets.KeySet(cs.Counters)
		}
	}
	for i, sl := range s.ResourceSlices {
		p := field.NewPath("resourceSlices").Index(i)
		if sl == nil {
			errs = append(errs, field.Required(p, "a ResourceSlice"))
			continue
		}
		switch {
		case sl.Name == "":
			errs = append(errs, field.Required(p.Child("metadata", "name"), ""))
		case sliceNames.Has(sl.Name):
			errs = append(errs, field.Duplicate(p.Child("metadata", "name"), sl.Name))
		}
		sliceNames.Insert(sl.Name)
		sp := p.Child("spec")
		spec := &sl.Spec
		if spec.Driver == "" {
			errs = append(errs, field.Required(sp.Child("driver"), ""))
		}
		if spec.Pool.Name == "" {
			errs = append(errs, field.Required(sp.Child("pool", "name"), ""))
		}
		if spec.Pool.ResourceSliceCount < 1 {
			errs = append(errs, field.Invalid(sp.Child("pool", "resourceSliceCount"), spec.Pool.ResourceSliceCount, "must be at least 1"))
		}
		if spec.Pool.Generation < 0 {
			errs = append(errs, field.Invalid(sp.Child("pool", "generation"), spec.Pool.Generation, "must not be negative"))
		}
		selection := 0
		if spec.NodeName != nil && *spec.NodeName != "" {
			selection++
		}
		if spec.NodeSelector != nil {
			selection++
		}
		if spec.AllNodes != nil && *spec.AllNodes {
			selection++
		}
		if spec.PerDeviceNodeSelection != nil && *spec.PerDeviceNodeSelection {
			selection++
		}
		if selection != 1 && len(spec.Devices) > 0 {
			errs = append(errs, field.Invalid(sp, selection, "exactly one of nodeName, nodeSelector, allNodes: true or perDeviceNodeSelection: true must be set"))
		}
		errs = append(errs, sliceLimits(sp, spec)...)
		devNames := sets.New[string]()
		for j, d := range spec.Devices {
			dp := sp.Child("devices").Index(j)
			switch {
			case d.Name == "":
				errs = append(errs, field.Required(dp.Child("name"), ""))
			case devNames.Has(d.Name):
				errs = append(errs, field.Duplicate(dp.Child("name"), d.Name))
			}
			devNames.Insert(d.Name)
			for _, name := range sortedKeys(stringKeys(d.Attributes)) {
				if n := attributeValues(d.Attributes[resourceapi.QualifiedName(name)]); n != 1 {
					errs = append(errs, field.Invalid(dp.Child("attributes").Key(name), n, "exactly one of int, bool, string, version, ints, bools, strings, versions must be set"))
				}
			}
			pool := counterSets[poolID{spec.Driver, spec.Pool.Name}]
			for k, cc := range d.ConsumesCounters {
				cp := dp.Child("consumesCounters").Index(k)
				counters, ok := pool[cc.CounterSet]
				if !ok {
					errs = append(errs, field.NotFound(cp.Child("counterSet"), cc.CounterSet))
					continue
				}
				for _, name := range sortedKeys(cc.Counters) {
					if !counters.Has(name) {
						errs = append(errs, field.NotFound(cp.Child("counters").Key(name), fmt.Sprintf("counter %s of counter set %s", name, cc.CounterSet)))
					}
				}
			}
		}
	}
	return errs
}

func stringKeys[V any](m map[resourceapi.QualifiedName]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

func attributeValues(a resourceapi.DeviceAttribute) int {
	n := 0
	for _, set := range []bool{a.IntValue != nil, a.BoolValue != nil, a.StringValue != nil, a.VersionValue != nil,
		a.IntValues != nil, a.BoolValues != nil, a.StringValues != nil, a.VersionValues != nil} {
		if set {
			n++
		}
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// validateAllocatedDevices checks that what AllocatedClaims hold is
// consistent with the slices and with each other: every result names a
// request of its claim and a device some slice publishes; a device is held
// by one result at a time, except by results with adminAccess (which do not
// count as in use) and, with features.consumableCapacity, by results with a
// shareID on a device with allowMultipleAllocations, each shareID once per
// device. That is how AllocatedState reads the claims.
func (s *Scenario) validateAllocatedDevices() field.ErrorList {
	published := map[structured.DeviceID]*resourceapi.Device{}
	for _, sl := range s.ResourceSlices {
		if sl == nil {
			continue
		}
		for i := range sl.Spec.Devices {
			d := &sl.Spec.Devices[i]
			id := structured.MakeDeviceID(sl.Spec.Driver, sl.Spec.Pool.Name, d.Name)
			if _, ok := published[id]; !ok {
				published[id] = d
			}
		}
	}
	type holder struct {
		claim  klog.ObjectRef
		result *field.Path
	}
	exclusive := map[structured.DeviceID]holder{}
	shared := map[structured.DeviceID]holder{} // first shared holder
	shareIDs := map[structured.SharedDeviceID]holder{}
	var errs field.ErrorList
	for i, c := range s.AllocatedClaims {
		if c == nil || c.Status.Allocation == nil {
			continue
		}
		cp := field.NewPath("allocatedClaims").Index(i)
		requests := requestNames(&c.Spec.Devices)
		for j, r := range c.Status.Allocation.Devices.Results {
			rp := cp.Child("status", "allocation", "devices", "results").Index(j)
			if r.Request != "" && !requests.Has(r.Request) {
				errs = append(errs, withDetail(field.NotFound(rp.Child("request"), r.Request),
					"not a request of the claim (a request, or <request>/<subrequest> of a firstAvailable one): "+strings.Join(sets.List(requests), ", ")))
			}
			if r.Driver == "" || r.Pool == "" || r.Device == "" {
				continue // reported by validateAllocation
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			d, ok := published[id]
			if !ok {
				errs = append(errs, withDetail(field.NotFound(rp.Child("device"), r.Device),
					fmt.Sprintf("no ResourceSlice of the scenario publishes device %s", id)))
				continue
			}
			if ptr.Deref(r.AdminAccess, false) {
				continue
			}
			h := holder{klog.KObj(c), rp}
			isShared := s.Features.ConsumableCapacity && ptr.Deref(d.AllowMultipleAllocations, false) && r.ShareID != nil
			first, held := exclusive[id]
			if !held && !isShared {
				first, held = shared[id]
			}
			if held {
				errs = append(errs, withDetail(field.Duplicate(rp.Child("device"), r.Device),
					fmt.Sprintf("device %s is also held by claim %s (%s); only adminAccess results, or with features.consumableCapacity results with a shareID on a device with allowMultipleAllocations, may share a device", id, first.claim, first.result)))
				continue
			}
			if !isShared {
				exclusive[id] = h
				continue
			}
			if _, ok := shared[id]; !ok {
				shared[id] = h
			}
			sid := structured.MakeSharedDeviceID(id, r.ShareID)
			if first, dup := shareIDs[sid]; dup {
				errs = append(errs, withDetail(field.Duplicate(rp.Child("shareID"), string(*r.ShareID)),
					fmt.Sprintf("device %s is also held under this shareID by claim %s (%s); each allocation of a shared device has its own shareID", id, first.claim, first.result)))
				continue
			}
			shareIDs[sid] = h
		}
	}
	return errs
}

// requestNames returns the names a result may name: each request, and
// <request>/<subrequest> for each subrequest of a firstAvailable request.
func requestNames(spec *resourceapi.DeviceClaim) sets.Set[string] {
	names := sets.New[string]()
	for _, r := range spec.Requests {
		if len(r.FirstAvailable) == 0 {
			names.Insert(r.Name)
		}
		for _, sr := range r.FirstAvailable {
			names.Insert(r.Name + "/" + sr.Name)
		}
	}
	return names
}

func withDetail(e *field.Error, detail string) *field.Error {
	e.Detail = detail
	return e
}
