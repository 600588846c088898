package allocator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// Allocator is the reference allocator. It is safe for concurrent use;
// New does the per-cluster work once, Allocate the per-node work.
type Allocator struct {
	opts         Options
	features     structured.Features
	state        structured.AllocatedState
	classLister  structured.DeviceClassLister
	celCache     *cel.Cache
	slicesOnNode map[string][]*resourceapi.ResourceSlice
	slicesShared []*resourceapi.ResourceSlice
	allSlices    []*resourceapi.ResourceSlice

	// Built on first use (most nodes never need them).
	poolIndexOnce sync.Once
	slicesByPool  map[poolKey][]*sliceInfo
	sharedOnce    sync.Once
	sharedInState map[structured.DeviceID]bool

	// distinctOK: upstream handles distinctAttribute constraints with this
	// feature set (see stableFeatures).
	distinctOK bool

	// completeOnly skips the lazy first phase (tests use it to run the
	// complete search on every input).
	completeOnly bool

	mu          sync.Mutex
	explanation string
}

// stableFeatures are the features of upstream's stable variant, which
// structured.NewAllocator picks whenever the enabled features are among
// these. That variant predates distinctAttribute (KEP-5075, which the API
// server only keeps with DRAConsumableCapacity on) and rejects it as an
// empty constraint; the reference allocator does the same.
var stableFeatures = structured.Features{AdminAccess: true, PrioritizedList: true, PartitionableDevices: true, DeviceTaints: true}

// New returns an allocator in ModeFirstFit, with upstream's
// structured.NewAllocator signature.
func New(ctx context.Context,
	features structured.Features,
	allocatedState structured.AllocatedState,
	classLister structured.DeviceClassLister,
	slices []*resourceapi.ResourceSlice,
	celCache *cel.Cache,
) (*Allocator, error) {
	return NewWithOptions(ctx, DefaultOptions(), features, allocatedState, classLister, slices, celCache)
}

// NewWithOptions is New with explicit options.
func NewWithOptions(ctx context.Context,
	opts Options,
	features structured.Features,
	allocatedState structured.AllocatedState,
	classLister structured.DeviceClassLister,
	slices []*resourceapi.ResourceSlice,
	celCache *cel.Cache,
) (*Allocator, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("create reference allocator: %w", err)
	}
	if celCache == nil {
		return nil, errors.New("create reference allocator: CEL cache is nil")
	}
	// Like upstream's incubating variant, New only groups the slices by
	// node name; pools are gathered and converted per Allocate call.
	a := &Allocator{
		opts:         opts,
		features:     features,
		state:        allocatedState,
		classLister:  classLister,
		celCache:     celCache,
		slicesOnNode: map[string][]*resourceapi.ResourceSlice{},
		allSlices:    slices,
		distinctOK:   !stableFeatures.Set().IsSuperset(features.Set()),
	}
	for _, s := range slices {
		if n := ptr.Deref(s.Spec.NodeName, ""); n != "" {
			a.slicesOnNode[n] = append(a.slicesOnNode[n], s)
		} else {
			a.slicesShared = append(a.slicesShared, s)
		}
	}
	klog.FromContext(ctx).V(5).Info("Created reference allocator", "numSlices", len(slices), "mode", opts.Mode)
	return a, nil
}

// Explain returns why the most recent Allocate call on this allocator that
// found no allocation (nil, nil) failed: which claim and request could not
// be satisfied, and what stood in the way of which devices (see the
// package documentation). It returns "" if no Allocate call has failed
// yet. With concurrent Allocate calls, the last one to finish wins; use
// AllocateExplained for a per-call answer.
func (a *Allocator) Explain() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.explanation
}

// Allocate finds devices for all claims on node. It returns one result per
// claim, nil with a nil error when the claims do not fit on this node, and
// an error for invalid input, context cancellation or an exhausted step
// budget (errors.Is(err, ErrStepBudget)).
func (a *Allocator) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	res, _, err := a.AllocateExplained(ctx, node, claims)
	return res, err
}

// AllocateExplained is Allocate that also returns, when no allocation was
// found (nil, "...", nil), the explanation Explain would give.
func (a *Allocator) AllocateExplained(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, string, error) {
	logger := klog.FromContext(ctx)
	s, err := a.prepare(ctx, node, claims)
	if err != nil {
		return nil, "", err
	}
	ok, err := s.run()
	if err != nil {
		return nil, "", err
	}
	if !ok {
		why := s.explain()
		a.mu.Lock()
		a.explanation = why
		a.mu.Unlock()
		logger.V(5).Info("No allocation on node", "node", klog.KObj(node), "reason", why, "steps", s.steps)
		for _, p := range s.pools {
			if p.invalid {
				return nil, why, fmt.Errorf("invalid resource pools were encountered%w", structured.ErrFailedAllocationOnNode)
			}
		}
		return nil, why, nil
	}
	res, err := s.results()
	if err != nil {
		return nil, "", err
	}
	logger.V(5).Info("Allocated", "node", klog.KObj(node), "numClaims", len(claims), "steps", s.steps)
	return res, "", nil
}

// reqInfo is one request without subrequests, or one subrequest.
type reqInfo struct {
	claim       int
	name        string // request or subrequest name
	parent      string // parent request name for a subrequest
	fullName    string
	class       *resourceapi.DeviceClass
	selectors   []resourceapi.DeviceSelector
	selKey      string
	classMemo   []int8 // selector results per device, see search.memo
	selMemo     []int8
	all         bool
	num         int
	admin       bool
	tolerations []resourceapi.DeviceToleration
	capacity    *resourceapi.CapacityRequirements
	allDevices  []int // All mode: the fixed device list

	cands   []int  // complete phase: statically usable devices, in order
	candSet []bool // indexed by device
	group   *reqGroup
	consIdx []int // constraints of the claim that apply to this request

	// derived maps a derived attribute's name to its CEL expression
	// (DRADerivedAttributes); it shadows the device attribute of that name
	// in the claim's constraints, for this request only. derivedKey lists
	// them canonically, for sharing candidate lists.
	derived    map[resourceapi.FullyQualifiedName]string
	derivedKey string
}

// reqGroup is one request of a claim: one alternative, or the
// firstAvailable subrequests in order.
type reqGroup struct {
	subs    []*reqInfo
	chosen  int
	minNum  int // fewest devices any alternative needs
	minRest int // fewest devices the later requests of the claim need
}

// prepare validates the claims exactly like upstream and builds the
// search: pools, devices, requests, constraints.
func (a *Allocator) prepare(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) (*search, error) {
	pools, err := a.gatherPools(node)
	if err != nil {
		return nil, fmt.Errorf("gather pool information: %w", err)
	}
	s := &search{
		a:        a,
		ctx:      ctx,
		node:     node,
		claims:   claims,
		pools:    pools,
		features: a.features,
		selMemo:  map[string][]int8{},
	}
	if err := s.buildDevices(); err != nil {
		return nil, err
	}
	s.reqs = make([][]*reqGroup, len(claims))
	s.cons = make([][]*constraint, len(claims))
	for ci, claim := range claims {
		minClaim := 0
		for ri := range claim.Spec.Devices.Requests {
			request := &claim.Spec.Devices.Requests[ri]
			g := &reqGroup{}
			if len(request.FirstAvailable) > 0 && !a.features.PrioritizedList {
				return nil, fmt.Errorf("claim %s, request %s: has subrequests, but the DRAPrioritizedList feature is disabled", klog.KObj(claim), request.Name)
			}
			if !a.features.ConsumableCapacity {
				if request.Exactly != nil && request.Exactly.Capacity != nil {
					return nil, fmt.Errorf("claim %s, request %s: has capacity requests, but the DRAConsumableCapacity feature is disabled", klog.KObj(claim), request.Name)
				}
				for _, sub := range request.FirstAvailable {
					if sub.Capacity != nil {
						return nil, fmt.Errorf("claim %s, subrequest %s: has capacity requests, but the DRAConsumableCapacity feature is disabled", klog.KObj(claim), sub.Name)
					}
				}
			}
			if len(request.FirstAvailable) > 0 {
				g.minNum = math.MaxInt
				for si := range request.FirstAvailable {
					sub := &request.FirstAvailable[si]
					r := &reqInfo{
						claim: ci, name: sub.Name, parent: request.Name, fullName: request.Name + "/" + sub.Name,
						selectors: sub.Selectors, tolerations: sub.Tolerations, capacity: sub.Capacity,
					}
					if err := s.validateRequest(r, sub.DeviceClassName, sub.AllocationMode, sub.Count, nil, sub.DerivedAttributes); err != nil {
						return nil, err
					}
					r.group = g
					g.subs = append(g.subs, r)
					g.minNum = min(g.minNum, r.num)
				}
			} else {
				ex := request.Exactly
				if ex == nil {
					return nil, fmt.Errorf("claim %s, request %s: neither exactly nor firstAvailable is set (unsupported request type?)", klog.KObj(claim), request.Name)
				}
				r := &reqInfo{
					claim: ci, name: request.Name, fullName: request.Name,
					selectors: ex.Selectors, tolerations: ex.Tolerations, capacity: ex.Capacity,
					admin: ptr.Deref(ex.AdminAccess, false),
				}
				if err := s.validateRequest(r, ex.DeviceClassName, ex.AllocationMode, ex.Count, ex.AdminAccess, ex.DerivedAttributes); err != nil {
					return nil, err
				}
				r.group = g
				g.subs = []*reqInfo{r}
				g.minNum = r.num
			}
			if g.minNum > resourceapi.AllocationResultsMaxSize-minClaim {
				return nil, fmt.Errorf("claim %s, request %s: adding %d devices exceeds the claim limit of %d, with %d already accounted for", klog.KObj(claim), request.Name, g.minNum, resourceapi.AllocationResultsMaxSize, minClaim)
			}
			minClaim += g.minNum
			s.reqs[ci] = append(s.reqs[ci], g)
		}
		rest := 0
		for ri := len(s.reqs[ci]) - 1; ri >= 0; ri-- {
			s.reqs[ci][ri].minRest = rest
			rest += s.reqs[ci][ri].minNum
		}
		for i, c := range claim.Spec.Devices.Constraints {
			con := &constraint{index: i, requests: sets.New(c.Requests...), list: a.features.ListTypeAttributes}
			switch {
			case c.MatchAttribute != nil:
				con.match, con.attr = true, *c.MatchAttribute
			case c.DistinctAttribute != nil && a.distinctOK:
				con.attr = *c.DistinctAttribute
			default:
				return nil, fmt.Errorf("claim %s, constraint #%d: empty constraint (unsupported constraint type?)", klog.KObj(claim), i)
			}
			con.vals = make([]*attrVal, len(s.devs))
			s.cons[ci] = append(s.cons[ci], con)
		}
		for _, g := range s.reqs[ci] {
			for _, r := range g.subs {
				for k, con := range s.cons[ci] {
					if con.applies(r) {
						r.consIdx = append(r.consIdx, k)
						con.addSource(r)
					}
				}
			}
		}
	}
	s.initState()
	return s, nil
}

// validateRequest is upstream's validateDeviceRequest.
func (s *search) validateRequest(r *reqInfo, className string, mode resourceapi.DeviceAllocationMode, count int64, adminAccess *bool, derived []resourceapi.DeviceDerivedAttribute) error {
	claim := s.claims[r.claim]
	if len(derived) > 0 {
		if !s.features.DerivedAttributes {
			return fmt.Errorf("claim %s, request %s: cannot handle request with derived attributes, the feature is disabled", klog.KObj(claim), r.name)
		}
		// Like upstream: a later entry of the same name wins.
		r.derived = make(map[resourceapi.FullyQualifiedName]string, len(derived))
		for _, da := range derived {
			r.derived[da.Name] = da.Expression
		}
		names := make([]string, 0, len(r.derived))
		for name := range r.derived {
			names = append(names, string(name))
		}
		slices.Sort(names)
		var key strings.Builder
		for _, name := range names {
			key.WriteString(name)
			key.WriteByte(0)
			key.WriteString(r.derived[resourceapi.FullyQualifiedName(name)])
			key.WriteByte(0)
		}
		r.derivedKey = key.String()
	}
	for i, sel := range r.selectors {
		if sel.CEL == nil {
			return fmt.Errorf("claim %s, request %s, selector #%d: CEL expression empty (unsupported selector type?)", klog.KObj(claim), r.name, i)
		}
	}
	if !s.features.AdminAccess && adminAccess != nil {
		return fmt.Errorf("claim %s, request %s: admin access is requested, but the feature is disabled", klog.KObj(claim), r.name)
	}
	if className == "" {
		return fmt.Errorf("claim %s, request %s: missing device class name (unsupported request type?)", klog.KObj(claim), r.name)
	}
	class, err := s.a.classLister.Get(className)
	if err != nil {
		return fmt.Errorf("claim %s, request %s: could not retrieve device class %s: %w", klog.KObj(claim), r.name, className, err)
	}
	r.class = class
	var key strings.Builder
	for _, sel := range r.selectors {
		key.WriteString(sel.CEL.Expression)
		key.WriteByte(0)
	}
	r.selKey = key.String()
	switch mode {
	case resourceapi.DeviceAllocationModeExactCount:
		if count > math.MaxInt {
			return fmt.Errorf("claim %s, request %s: exact count %d is too large", klog.KObj(claim), r.name, count)
		}
		r.num = int(count)
	case resourceapi.DeviceAllocationModeAll:
		r.all = true
		for _, p := range s.pools {
			if p.incomplete {
				return fmt.Errorf("claim %s, request %s: asks for all devices, but resource pool %s is currently being updated", klog.KObj(claim), r.name, p.key)
			}
			if p.invalid {
				return fmt.Errorf("claim %s, request %s: asks for all devices, but resource pool %s is currently invalid", klog.KObj(claim), r.name, p.key)
			}
			for di := p.firstDev; di < p.endDev; di++ {
				ok, err := s.selectable(r, di)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				if s.features.ConsumableCapacity {
					d := s.devs[di]
					fits, err := capacityFits(nil, r.capacity, d.api.AllowMultipleAllocations, d.api.Capacity, nil, s.features.FractionalCapacityRange)
					if err != nil {
						return fmt.Errorf("claim %s, request %s: checking capacity for device %s: %w", klog.KObj(claim), r.name, d.api.Name, err)
					}
					if !fits {
						continue
					}
				}
				r.allDevices = append(r.allDevices, di)
			}
		}
		r.num = len(r.allDevices)
	default:
		return fmt.Errorf("claim %s, request %s: unsupported count mode %s", klog.KObj(claim), r.name, mode)
	}
	return nil
}

// results converts the found solution into API allocation results, the
// way upstream builds them (configs, tolerations, node selector).
func (s *search) results() ([]resourceapi.AllocationResult, error) {
	out := make([]resourceapi.AllocationResult, len(s.claims))
	for ci, claim := range s.claims {
		ar := &out[ci]
		ar.Devices.Results = make([]resourceapi.DeviceRequestAllocationResult, len(s.chosen[ci]))
		for i, c := range s.chosen[ci] {
			d := s.devs[c.dev]
			res := resourceapi.DeviceRequestAllocationResult{
				Request:     c.req.fullName,
				Driver:      d.pool.key.driver,
				Pool:        d.pool.key.pool,
				Device:      d.api.Name,
				Tolerations: c.req.tolerations,
				ShareID:     c.shareID,
			}
			if c.req.admin {
				res.AdminAccess = ptr.To(true)
			}
			if len(c.consumed) > 0 {
				res.ConsumedCapacity = make(map[resourceapi.QualifiedName]resource.Quantity, len(c.consumed))
				for k, v := range c.consumed {
					res.ConsumedCapacity[k] = v.DeepCopy()
				}
			}
			if s.features.DeviceBindingAndStatus {
				res.BindingConditions = d.api.BindingConditions
				res.BindingFailureConditions = d.api.BindingFailureConditions
			}
			if len(d.slice.s.Spec.SkipNodeOperations) > 0 {
				res.SkipNodeOperations = d.slice.s.Spec.SkipNodeOperations
			}
			ar.Devices.Results[i] = res
		}

		// Class configs: once per class, in request order.
		type span struct{ start, end int }
		classSpans := map[string]span{}
		for _, g := range s.reqs[ci] {
			r := g.subs[g.chosen]
			if sp, ok := classSpans[r.class.Name]; ok {
				for i := sp.start; i < sp.end; i++ {
					ar.Devices.Config[i].Requests = append(ar.Devices.Config[i].Requests, r.fullName)
				}
				continue
			}
			start := len(ar.Devices.Config)
			for _, cfg := range r.class.Spec.Config {
				ar.Devices.Config = append(ar.Devices.Config, resourceapi.DeviceAllocationConfiguration{
					Source:              resourceapi.AllocationConfigSourceClass,
					Requests:            []string{r.fullName},
					DeviceConfiguration: cfg.DeviceConfiguration,
				})
			}
			classSpans[r.class.Name] = span{start, len(ar.Devices.Config)}
		}
		// Claim configs that apply to a request or to the chosen subrequest.
		for _, cfg := range claim.Spec.Devices.Config {
			applies := len(cfg.Requests) == 0
			for ri, request := range claim.Spec.Devices.Requests {
				if applies {
					break
				}
				if slices.Contains(cfg.Requests, request.Name) {
					applies = true
					break
				}
				g := s.reqs[ci][ri]
				if g.subs[g.chosen].parent != "" && slices.Contains(cfg.Requests, g.subs[g.chosen].fullName) {
					applies = true
				}
			}
			if applies {
				ar.Devices.Config = append(ar.Devices.Config, resourceapi.DeviceAllocationConfiguration{
					Source:              resourceapi.AllocationConfigSourceClaim,
					Requests:            cfg.Requests,
					DeviceConfiguration: cfg.DeviceConfiguration,
				})
			}
		}
		// A config naming every request applies to all: clear its list.
		for i := range ar.Devices.Config {
			reqs := ar.Devices.Config[i].Requests
			if len(reqs) == 0 {
				continue
			}
			all := true
			for ri, request := range claim.Spec.Devices.Requests {
				if slices.Contains(reqs, request.Name) {
					continue
				}
				g := s.reqs[ci][ri]
				if r := g.subs[g.chosen]; r.parent != "" && slices.Contains(reqs, r.fullName) {
					continue
				}
				all = false
				break
			}
			if all {
				ar.Devices.Config[i].Requests = nil
			}
		}
		ns, err := s.nodeSelector(ci)
		if err != nil {
			return nil, fmt.Errorf("create NodeSelector for claim %s: %w", claim.Name, err)
		}
		ar.NodeSelector = ns
	}
	return out, nil
}

// nodeSelector builds the allocation's node selector like upstream.
func (s *search) nodeSelector(ci int) (*v1.NodeSelector, error) {
	ns := &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{}}}
	for _, c := range s.chosen[ci] {
		d := s.devs[c.dev]
		spec := &d.slice.s.Spec
		nodeName, sel := spec.NodeName, spec.NodeSelector
		if ptr.Deref(spec.PerDeviceNodeSelection, false) {
			nodeName, sel = d.api.NodeName, d.api.NodeSelector
		}
		if nodeName != nil || ptr.Deref(d.api.BindsToNode, false) {
			return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchFields: []v1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{s.node.Name},
				}},
			}}}, nil
		}
		if sel == nil {
			continue
		}
		switch len(sel.NodeSelectorTerms) {
		case 0:
		case 1:
			addRequirements(sel.NodeSelectorTerms[0].MatchFields, &ns.NodeSelectorTerms[0].MatchFields)
			addRequirements(sel.NodeSelectorTerms[0].MatchExpressions, &ns.NodeSelectorTerms[0].MatchExpressions)
		default:
			return nil, fmt.Errorf("unsupported ResourceSlice.NodeSelector with %d terms", len(sel.NodeSelectorTerms))
		}
	}
	if len(ns.NodeSelectorTerms[0].MatchFields) > 0 || len(ns.NodeSelectorTerms[0].MatchExpressions) > 0 {
		return ns, nil
	}
	return nil, nil
}

func addRequirements(from []v1.NodeSelectorRequirement, to *[]v1.NodeSelectorRequirement) {
	for _, req := range from {
		values := sets.New(req.Values...)
		found := false
		for _, have := range *to {
			if have.Key == req.Key && have.Operator == req.Operator && sets.New(have.Values...).Equal(values) {
				found = true
				break
			}
		}
		if !found {
			*to = append(*to, req)
		}
	}
}
