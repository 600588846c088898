package allocator

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

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
