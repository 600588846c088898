package allocator

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

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
		view:     view{claims: claims},
		a:        a,
		ctx:      ctx,
		node:     node,
		pools:    pools,
		features: a.features,
		selMemo:  map[string][]int8{},
	}
	if err := s.buildDevices(); err != nil {
		return nil, err
	}
	s.attrs = &attrSource{ctx: ctx, celCache: a.celCache, devs: s.devs}
	s.reqs = make([][]*reqGroup, len(claims))
	s.cons = make([][]*constraint, len(claims))
	for ci, claim := range claims {
		if err := s.prepareRequests(ci, claim); err != nil {
			return nil, err
		}
		if err := s.prepareConstraints(ci, claim); err != nil {
			return nil, err
		}
	}
	s.initState()
	return s, nil
}

// prepareRequests validates the requests of claim ci like upstream and
// adds them to the search.
func (s *search) prepareRequests(ci int, claim *resourceapi.ResourceClaim) error {
	minClaim := 0
	for ri := range claim.Spec.Devices.Requests {
		request := &claim.Spec.Devices.Requests[ri]
		g := &reqGroup{}
		if len(request.FirstAvailable) > 0 && !s.features.PrioritizedList {
			return fmt.Errorf("claim %s, request %s: has subrequests, but the DRAPrioritizedList feature is disabled", klog.KObj(claim), request.Name)
		}
		if !s.features.ConsumableCapacity {
			if request.Exactly != nil && request.Exactly.Capacity != nil {
				return fmt.Errorf("claim %s, request %s: has capacity requests, but the DRAConsumableCapacity feature is disabled", klog.KObj(claim), request.Name)
			}
			for _, sub := range request.FirstAvailable {
				if sub.Capacity != nil {
					return fmt.Errorf("claim %s, subrequest %s: has capacity requests, but the DRAConsumableCapacity feature is disabled", klog.KObj(claim), sub.Name)
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
					return err
				}
				r.group = g
				g.subs = append(g.subs, r)
				g.minNum = min(g.minNum, r.num)
			}
		} else {
			ex := request.Exactly
			if ex == nil {
				return fmt.Errorf("claim %s, request %s: neither exactly nor firstAvailable is set (unsupported request type?)", klog.KObj(claim), request.Name)
			}
			r := &reqInfo{
				claim: ci, name: request.Name, fullName: request.Name,
				selectors: ex.Selectors, tolerations: ex.Tolerations, capacity: ex.Capacity,
				admin: ptr.Deref(ex.AdminAccess, false),
			}
			if err := s.validateRequest(r, ex.DeviceClassName, ex.AllocationMode, ex.Count, ex.AdminAccess, ex.DerivedAttributes); err != nil {
				return err
			}
			r.group = g
			g.subs = []*reqInfo{r}
			g.minNum = r.num
		}
		if g.minNum > resourceapi.AllocationResultsMaxSize-minClaim {
			return fmt.Errorf("claim %s, request %s: adding %d devices exceeds the claim limit of %d, with %d already accounted for", klog.KObj(claim), request.Name, g.minNum, resourceapi.AllocationResultsMaxSize, minClaim)
		}
		minClaim += g.minNum
		s.reqs[ci] = append(s.reqs[ci], g)
	}
	rest := 0
	for ri := len(s.reqs[ci]) - 1; ri >= 0; ri-- {
		s.reqs[ci][ri].minRest = rest
		rest += s.reqs[ci][ri].minNum
	}
	return nil
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
