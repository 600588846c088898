package allocator

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"
)

// selectable is upstream's isSelectable: binding-condition gating, class
// and request CEL selectors, per-device node selection. Results are
// memoized per (class, device) and per (request selectors, device), so
// identical requests of identical claims evaluate each device once.
func (s *search) selectable(r *reqInfo, di int) (bool, error) {
	d := s.devs[di]
	if !s.features.DeviceBindingAndStatus && len(d.api.BindingConditions) > 0 {
		return false, nil
	}
	if r.classMemo == nil {
		r.classMemo = s.memo("c\x00" + r.class.Name)
	}
	ok, err := memoEval(r.classMemo, di, func() (bool, error) {
		return s.evalSelectors(r, r.class, r.class.Spec.Selectors, d)
	})
	if err != nil || !ok {
		return false, err
	}
	if len(r.selectors) > 0 {
		if r.selMemo == nil {
			r.selMemo = s.memo("r\x00" + r.selKey)
		}
		ok, err = memoEval(r.selMemo, di, func() (bool, error) {
			return s.evalSelectors(r, nil, r.selectors, d)
		})
		if err != nil || !ok {
			return false, err
		}
	}
	if d.nodeErr != nil {
		return false, d.nodeErr
	}
	return d.nodeOK, nil
}

// memo returns the per-device result memo of one selector list (a class's
// or a request's), shared by all requests with the same list.
func (s *search) memo(key string) []int8 {
	m := s.selMemo[key]
	if m == nil {
		m = make([]int8, len(s.devs))
		s.selMemo[key] = m
	}
	return m
}

func memoEval(m []int8, di int, eval func() (bool, error)) (bool, error) {
	switch m[di] {
	case 1:
		return true, nil
	case 2:
		return false, nil
	}
	ok, err := eval()
	if err != nil {
		return false, err
	}
	if ok {
		m[di] = 1
	} else {
		m[di] = 2
	}
	return ok, nil
}

func (s *search) evalSelectors(r *reqInfo, class *resourceapi.DeviceClass, sels []resourceapi.DeviceSelector, d *device) (bool, error) {
	claim := s.claims[r.claim]
	for i, sel := range sels {
		if sel.CEL == nil {
			if class != nil {
				return false, fmt.Errorf("class %s: selector #%d: CEL expression empty (unsupported selector type?)", class.Name, i)
			}
			return false, fmt.Errorf("claim %s, request %s, selector #%d: CEL expression empty (unsupported selector type?)", klog.KObj(claim), r.name, i)
		}
		expr := s.a.celCache.GetOrCompile(sel.CEL.Expression)
		if expr.Error != nil {
			if class != nil {
				return false, fmt.Errorf("class %s: selector #%d: CEL compile error: %w", class.Name, i, expr.Error)
			}
			return false, fmt.Errorf("claim %s: selector #%d: CEL compile error: %w", klog.KObj(claim), i, expr.Error)
		}
		matches, _, err := expr.DeviceMatches(s.ctx, cel.Device{
			Driver:                   d.pool.key.driver,
			AllowMultipleAllocations: d.api.AllowMultipleAllocations,
			Attributes:               d.api.Attributes,
			Capacity:                 d.api.Capacity,
		})
		if err != nil {
			err = cel.EnhanceRuntimeError(err)
			if class != nil {
				return false, fmt.Errorf("class %s: selector #%d on device %s: CEL runtime error: %w", class.Name, i, d.ID(), err)
			}
			return false, fmt.Errorf("claim %s: selector #%d on device %s: CEL runtime error: %w", klog.KObj(claim), i, d.ID(), err)
		}
		if !matches {
			return false, nil
		}
	}
	return true, nil
}

// untoleratedTaint returns the first NoSchedule or NoExecute taint of the
// device that none of the tolerations tolerates, or nil.
func untoleratedTaint(d *resourceapi.Device, tolerations []resourceapi.DeviceToleration) *resourceapi.DeviceTaint {
	for i := range d.Taints {
		taint := &d.Taints[i]
		if taint.Effect != resourceapi.DeviceTaintEffectNoSchedule && taint.Effect != resourceapi.DeviceTaintEffectNoExecute {
			continue
		}
		tolerated := false
		for _, t := range tolerations {
			if resourceclaim.ToleratesTaint(t, *taint) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return taint
		}
	}
	return nil
}
