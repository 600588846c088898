package check

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// MaxResultsPerClaim is the API limit on status.allocation.devices.results.
const MaxResultsPerClaim = 32

// Input is everything the allocator was given.
type Input struct {
	Features       structured.Features
	AllocatedState structured.AllocatedState
	Classes        []*resourceapi.DeviceClass
	Slices         []*resourceapi.ResourceSlice
	Node           *v1.Node
	Claims         []*resourceapi.ResourceClaim
}

type featureSet = structured.Features

// Check verifies results, one AllocationResult per claim of in.Claims, and
// returns nil if they are a valid allocation, otherwise the joined
// violations. A nil results slice ("does not fit") is valid.
func Check(ctx context.Context, in Input, results []resourceapi.AllocationResult) error {
	if results == nil {
		return nil
	}
	if err := in.validate(len(results)); err != nil {
		return err
	}
	c := &checker{
		ctx:      ctx,
		in:       in,
		pools:    buildPools(in.Features, in.Node, in.Slices),
		classes:  map[string]*resourceapi.DeviceClass{},
		compiled: map[string]cel.CompilationResult{},
		matched:  map[matchKey]matchResult{},
		batchUse: map[deviceKey]int{},
		hidden:   map[deviceKey]bool{},
	}
	for _, s := range in.Slices {
		if !sliceVisible(in.Node, s) {
			for _, d := range s.Spec.Devices {
				c.hidden[deviceKey{s.Spec.Driver, s.Spec.Pool.Name, d.Name}] = true
			}
		}
	}
	for _, class := range in.Classes {
		c.classes[class.Name] = class
	}
	for i := range results {
		for _, r := range results[i].Devices.Results {
			if !isTrue(r.AdminAccess) {
				c.batchUse[deviceKey{r.Driver, r.Pool, r.Device}]++
			}
		}
	}
	for i, claim := range in.Claims {
		c.checkClaim(claim, &results[i])
	}
	c.checkSharing()
	c.checkCounters()
	return errors.Join(c.violations...)
}

func (in Input) validate(numResults int) error {
	if in.Node == nil {
		return fmt.Errorf("%w: node is nil", ErrInvalidInput)
	}
	if numResults != len(in.Claims) {
		return fmt.Errorf("%w: %d results for %d claims", ErrInvalidInput, numResults, len(in.Claims))
	}
	for i, claim := range in.Claims {
		if claim == nil {
			return fmt.Errorf("%w: claims[%d] is nil", ErrInvalidInput, i)
		}
	}
	for i, s := range in.Slices {
		if s == nil {
			return fmt.Errorf("%w: slices[%d] is nil", ErrInvalidInput, i)
		}
	}
	for i, class := range in.Classes {
		if class == nil {
			return fmt.Errorf("%w: classes[%d] is nil", ErrInvalidInput, i)
		}
	}
	return nil
}

type checker struct {
	ctx        context.Context
	in         Input
	pools      map[poolKey]*pool
	classes    map[string]*resourceapi.DeviceClass
	compiled   map[string]cel.CompilationResult
	matched    map[matchKey]matchResult
	violations []error
	// batchUse counts the non-admin results per device over all claims.
	batchUse map[deviceKey]int
	// uses lists every result whose device exists, over all claims.
	uses []use
	// hidden holds the devices of slices the node cannot see.
	hidden map[deviceKey]bool
}

// use is one result device of one claim.
type use struct {
	claim  string
	result *resourceapi.DeviceRequestAllocationResult
	dev    *device
	// derived are the derived attributes of the result's request.
	derived []resourceapi.DeviceDerivedAttribute
}

func (c *checker) fail(claim, request, dev string, rule Rule, format string, args ...any) {
	c.violations = append(c.violations, &Violation{Claim: claim, Request: request, Device: dev, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

// reqSpec is the effective request behind a result: an exact request or the
// chosen firstAvailable subrequest.
type reqSpec struct {
	name        string
	class       string
	selectors   []resourceapi.DeviceSelector
	mode        resourceapi.DeviceAllocationMode
	count       int64
	admin       bool
	tolerations []resourceapi.DeviceToleration
	capacity    map[resourceapi.QualifiedName]resource.Quantity
	derived     []resourceapi.DeviceDerivedAttribute
}

func exactSpec(name string, e *resourceapi.ExactDeviceRequest) reqSpec {
	s := reqSpec{name: name, class: e.DeviceClassName, selectors: e.Selectors, mode: e.AllocationMode, count: e.Count,
		admin: isTrue(e.AdminAccess), tolerations: e.Tolerations, derived: e.DerivedAttributes}
	if e.Capacity != nil {
		s.capacity = e.Capacity.Requests
	}
	return s.defaulted()
}

func subSpec(name string, e *resourceapi.DeviceSubRequest) reqSpec {
	s := reqSpec{name: name, class: e.DeviceClassName, selectors: e.Selectors, mode: e.AllocationMode, count: e.Count,
		tolerations: e.Tolerations, derived: e.DerivedAttributes}
	if e.Capacity != nil {
		s.capacity = e.Capacity.Requests
	}
	return s.defaulted()
}

// defaulted applies the API defaults (ExactCount, count 1).
func (s reqSpec) defaulted() reqSpec {
	if s.mode == "" {
		s.mode = resourceapi.DeviceAllocationModeExactCount
	}
	if s.mode == resourceapi.DeviceAllocationModeExactCount && s.count == 0 {
		s.count = 1
	}
	return s
}

func (c *checker) checkClaim(claim *resourceapi.ResourceClaim, result *resourceapi.AllocationResult) {
	claimName := claim.Namespace + "/" + claim.Name
	results := result.Devices.Results
	if len(results) > MaxResultsPerClaim {
		c.fail(claimName, "", "", RuleMaxResults, "%d device results, at most %d allowed", len(results), MaxResultsPerClaim)
	}
	requests := map[string]*resourceapi.DeviceRequest{}
	for i := range claim.Spec.Devices.Requests {
		requests[claim.Spec.Devices.Requests[i].Name] = &claim.Spec.Devices.Requests[i]
	}

	// Per result: name, device, selectors, taints, admin access, capacity.
	type chosen struct {
		sub string
		use use
	}
	byRequest := map[string][]chosen{}
	var claimUses []use
	allNodes := true
	for i := range results {
		r := &results[i]
		key := deviceKey{r.Driver, r.Pool, r.Device}
		base, sub, _ := strings.Cut(r.Request, "/")
		req := requests[base]
		if req == nil || strings.Contains(sub, "/") {
			c.fail(claimName, r.Request, key.String(), RuleRequestName, "no such request in the claim")
			continue
		}
		spec, ok := c.resultSpec(claimName, r.Request, req, sub)
		if !ok {
			continue
		}
		dev := c.lookup(claimName, r.Request, key)
		if dev == nil {
			continue
		}
		u := use{claim: claimName, result: r, dev: dev, derived: spec.derived}
		byRequest[base] = append(byRequest[base], chosen{sub: sub, use: u})
		claimUses = append(claimUses, u)
		c.uses = append(c.uses, u)
		if !dev.allNodes() {
			allNodes = false
		}
		c.checkDevice(claimName, spec, dev, r)
	}

	// Per request: count or All, one subrequest.
	for _, req := range claim.Spec.Devices.Requests {
		got := byRequest[req.Name]
		var spec reqSpec
		switch {
		case req.Exactly != nil:
			spec = exactSpec(req.Name, req.Exactly)
		case len(req.FirstAvailable) > 0:
			if len(got) == 0 {
				c.fail(claimName, req.Name, "", RuleCount, "no device allocated for any subrequest")
				continue
			}
			sub := got[0].sub
			if slices.ContainsFunc(got, func(ch chosen) bool { return ch.sub != sub }) {
				c.fail(claimName, req.Name, "", RuleRequestName, "results use more than one subrequest")
				continue
			}
			i := slices.IndexFunc(req.FirstAvailable, func(s resourceapi.DeviceSubRequest) bool { return s.Name == sub })
			spec = subSpec(req.Name+"/"+sub, &req.FirstAvailable[i])
		default:
			c.fail(claimName, req.Name, "", RuleRequestName, "request has neither exactly nor firstAvailable")
			continue
		}
		devs := make([]*device, len(got))
		for i, ch := range got {
			devs[i] = ch.use.dev
		}
		switch spec.mode {
		case resourceapi.DeviceAllocationModeAll:
			c.checkAll(claimName, spec, devs)
		case resourceapi.DeviceAllocationModeExactCount:
			if int64(len(devs)) != spec.count {
				c.fail(claimName, spec.name, "", RuleCount, "%d devices allocated, count is %d", len(devs), spec.count)
			}
		default:
			c.fail(claimName, spec.name, "", RuleCount, "unknown allocationMode %q", spec.mode)
		}
	}

	c.checkConstraints(claimName, claim.Spec.Devices.Constraints, claimUses)

	if ns := result.NodeSelector; ns != nil {
		sel, err := nodeaffinity.NewNodeSelector(ns)
		switch {
		case err != nil:
			c.fail(claimName, "", "", RuleNodeSelector, "invalid node selector: %v", err)
		case !sel.Match(c.in.Node):
			c.fail(claimName, "", "", RuleNodeSelector, "node selector does not select node %s", c.in.Node.Name)
		}
	} else if !allNodes {
		c.fail(claimName, "", "", RuleNodeSelector, "no node selector, but some devices are not available on all nodes")
	}
}

// resultSpec finds the request or subrequest a result names.
func (c *checker) resultSpec(claimName, resultName string, req *resourceapi.DeviceRequest, sub string) (reqSpec, bool) {
	switch {
	case req.Exactly != nil && sub == "":
		return exactSpec(req.Name, req.Exactly), true
	case req.Exactly != nil:
		c.fail(claimName, resultName, "", RuleRequestName, "request %s has no subrequests", req.Name)
	case sub == "":
		c.fail(claimName, resultName, "", RuleRequestName, "request %s is a firstAvailable request, the result must name a subrequest", req.Name)
	default:
		if !c.in.Features.PrioritizedList {
			c.fail(claimName, resultName, "", RuleFeature, "firstAvailable needs the PrioritizedList feature")
		}
		for i := range req.FirstAvailable {
			if req.FirstAvailable[i].Name == sub {
				return subSpec(resultName, &req.FirstAvailable[i]), true
			}
		}
		c.fail(claimName, resultName, "", RuleRequestName, "request %s has no subrequest %s", req.Name, sub)
	}
	return reqSpec{}, false
}

// lookup finds a result's device in a usable pool.
func (c *checker) lookup(claimName, request string, key deviceKey) *device {
	p := c.pools[poolKey{key.driver, key.pool}]
	switch {
	case p == nil && c.hidden[key]:
		c.fail(claimName, request, key.String(), RuleNodeAccess, "the device's slice is not available on node %s", c.in.Node.Name)
		return nil
	case p == nil:
		c.fail(claimName, request, key.String(), RuleDevice, "no pool %s of driver %s on node %s", key.pool, key.driver, c.in.Node.Name)
		return nil
	case p.problem != "":
		c.fail(claimName, request, key.String(), RuleDevice, "pool %s is not usable: %s", key.pool, p.problem)
		return nil
	}
	dev := p.devices[key.device]
	if dev == nil {
		c.fail(claimName, request, key.String(), RuleDevice, "no device %s in the current generation of pool %s on node %s", key.device, key.pool, c.in.Node.Name)
	}
	return dev
}

// checkDevice checks one result device against its request.
func (c *checker) checkDevice(claimName string, spec reqSpec, dev *device, r *resourceapi.DeviceRequestAllocationResult) {
	features := c.in.Features
	name := dev.key.String()
	if ok, why, err := dev.reachable(features, c.in.Node); err != nil {
		c.fail(claimName, spec.name, name, RuleNodeAccess, "%v", err)
	} else if !ok {
		c.fail(claimName, spec.name, name, RuleNodeAccess, "not available on node %s: %s", c.in.Node.Name, why)
	}
	if why := featureUnusable(features, dev); why != "" {
		c.fail(claimName, spec.name, name, RuleFeature, "%s", why)
	}
	if ok, rule, why := c.matches(spec, dev); !ok {
		c.fail(claimName, spec.name, name, rule, "%s", why)
	}
	if features.DeviceTaints {
		if taint := untolerated(dev.dev.Taints, spec.tolerations); taint != nil {
			c.fail(claimName, spec.name, name, RuleTaint, "taint %s=%s:%s is not tolerated", taint.Key, taint.Value, taint.Effect)
		}
	}
	switch {
	case spec.admin && !features.AdminAccess:
		c.fail(claimName, spec.name, name, RuleFeature, "adminAccess needs the AdminAccess feature")
	case spec.admin && !isTrue(r.AdminAccess):
		c.fail(claimName, spec.name, name, RuleAdminAccess, "request asks for admin access, result lacks adminAccess: true")
	case !spec.admin && isTrue(r.AdminAccess):
		c.fail(claimName, spec.name, name, RuleAdminAccess, "result has adminAccess: true, the request does not ask for it")
	}
	if features.ConsumableCapacity {
		c.checkCapacityRequest(claimName, spec, dev, r)
	}
}

// featureUnusable says why a device cannot be allocated with the features
// given, or "".
func featureUnusable(features featureSet, dev *device) string {
	switch {
	case len(dev.dev.ConsumesCounters) > 0 && !features.PartitionableDevices:
		return "device consumes counters, PartitionableDevices is disabled"
	case (len(dev.dev.BindingConditions) > 0 || len(dev.dev.BindingFailureConditions) > 0) && !features.DeviceBindingAndStatus:
		return "device has binding conditions, DeviceBindingAndStatus is disabled"
	}
	return ""
}

// checkAll checks an All request: every matching device that could be
// allocated is allocated.
func (c *checker) checkAll(claimName string, spec reqSpec, got []*device) {
	features := c.in.Features
	have := map[deviceKey]bool{}
	for _, d := range got {
		have[d.key] = true
	}
	for _, k := range slices.SortedFunc(maps.Keys(c.pools), func(a, b poolKey) int {
		return strings.Compare(a.driver+"/"+a.pool, b.driver+"/"+b.pool)
	}) {
		p := c.pools[k]
		for _, name := range slices.Sorted(maps.Keys(p.devices)) {
			d := p.devices[name]
			if ok, _, err := d.reachable(features, c.in.Node); err != nil || !ok {
				continue
			}
			if featureUnusable(features, d) != "" {
				continue
			}
			if ok, _, _ := c.matches(spec, d); !ok {
				continue
			}
			if p.problem != "" {
				c.fail(claimName, spec.name, d.key.String(), RuleAll, "matching device in unusable pool %s: %s", k.pool, p.problem)
				continue
			}
			if have[d.key] {
				continue
			}
			if features.DeviceTaints && untolerated(d.dev.Taints, spec.tolerations) != nil {
				continue
			}
			if features.ConsumableCapacity && isTrue(d.dev.AllowMultipleAllocations) {
				continue
			}
			if !spec.admin && (c.in.AllocatedState.AllocatedDevices.Has(structured.MakeDeviceID(d.key.driver, d.key.pool, d.key.device)) || c.batchUse[d.key] > 0) {
				continue
			}
			c.fail(claimName, spec.name, d.key.String(), RuleAll, "allocationMode All, but this matching, available device is not allocated")
		}
	}
}

// matchKey caches selector results per request spec and device.
type matchKey struct {
	class     string
	selectors string
	device    deviceKey
	capacity  string
}

type matchResult struct {
	ok   bool
	rule Rule
	why  string
}

// matches evaluates the class and request selectors and the capacity
// requirement (a filter: the device must have that much capacity).
func (c *checker) matches(spec reqSpec, d *device) (bool, Rule, string) {
	var sel strings.Builder
	for _, s := range spec.selectors {
		if s.CEL != nil {
			sel.WriteString(strconv.Quote(s.CEL.Expression))
		}
	}
	key := matchKey{class: spec.class, selectors: sel.String(), device: d.key, capacity: fmt.Sprint(spec.capacity)}
	if r, ok := c.matched[key]; ok {
		return r.ok, r.rule, r.why
	}
	r := c.evaluate(spec, d)
	c.matched[key] = r
	return r.ok, r.rule, r.why
}

func (c *checker) evaluate(spec reqSpec, d *device) matchResult {
	class := c.classes[spec.class]
	if class == nil {
		return matchResult{rule: RuleClass, why: fmt.Sprintf("device class %q not found", spec.class)}
	}
	for i, s := range class.Spec.Selectors {
		if ok, why := c.selectorHolds(s, d); !ok {
			return matchResult{rule: RuleClass, why: fmt.Sprintf("class %s selector %d: %s", class.Name, i, why)}
		}
	}
	for i, s := range spec.selectors {
		if ok, why := c.selectorHolds(s, d); !ok {
			return matchResult{rule: RuleSelector, why: fmt.Sprintf("selector %d: %s", i, why)}
		}
	}
	if c.in.Features.ConsumableCapacity {
		for _, name := range slices.Sorted(maps.Keys(spec.capacity)) {
			want := spec.capacity[name]
			capacity, ok := lookupCapacity(d, name)
			if !ok {
				return matchResult{rule: RuleCapacity, why: fmt.Sprintf("capacity %s requested, the device has none", name)}
			}
			if capacity.Value.Cmp(want) < 0 {
				return matchResult{rule: RuleCapacity, why: fmt.Sprintf("capacity %s: %s requested, the device has %s", name, want.String(), capacity.Value.String())}
			}
		}
	}
	return matchResult{ok: true}
}

func (c *checker) selectorHolds(s resourceapi.DeviceSelector, d *device) (bool, string) {
	if s.CEL == nil {
		return false, "selector without cel expression"
	}
	expr := s.CEL.Expression
	prog, ok := c.compiled[expr]
	if !ok {
		prog = cel.GetCompiler(cel.Features{
			EnableConsumableCapacity: c.in.Features.ConsumableCapacity,
			EnableListTypeAttributes: c.in.Features.ListTypeAttributes,
		}).CompileCELExpression(expr, cel.Options{})
		c.compiled[expr] = prog
	}
	if prog.Error != nil {
		return false, fmt.Sprintf("CEL compile error in %q: %v", expr, prog.Error)
	}
	matches, _, err := prog.DeviceMatches(c.ctx, cel.Device{
		Driver:                   d.key.driver,
		AllowMultipleAllocations: d.dev.AllowMultipleAllocations,
		Attributes:               d.dev.Attributes,
		Capacity:                 d.dev.Capacity,
	})
	switch {
	case err != nil:
		return false, fmt.Sprintf("CEL runtime error in %q: %v", expr, err)
	case !matches:
		return false, fmt.Sprintf("%q is false", expr)
	}
	return true, ""
}

func isTrue(b *bool) bool { return b != nil && *b }
