package scenario

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// Structured returns the allocator feature set.
func (f Features) Structured() structured.Features {
	return structured.Features{
		AdminAccess:             f.AdminAccess,
		CompatibilityGroups:     f.CompatibilityGroups,
		ConsumableCapacity:      f.ConsumableCapacity,
		DerivedAttributes:       f.DerivedAttributes,
		DeviceBindingAndStatus:  f.DeviceBindingAndStatus,
		DeviceTaints:            f.DeviceTaints,
		FractionalCapacityRange: f.FractionalCapacityRange,
		ListTypeAttributes:      f.ListTypeAttributes,
		OptionalNodeOperations:  f.OptionalNodeOperations,
		PartitionableDevices:    f.PartitionableDevices,
		PrioritizedList:         f.PrioritizedList,
	}
}

// CEL returns the CEL environment features these allocator features need,
// for cel.NewCache.
func (f Features) CEL() cel.Features {
	return cel.Features{EnableConsumableCapacity: f.ConsumableCapacity, EnableListTypeAttributes: f.ListTypeAttributes}
}

// ClassLister serves a fixed list of DeviceClasses; it implements
// structured.DeviceClassLister. Get of an unknown name returns a NotFound
// API error, as the scheduler's informer lister does.
type ClassLister struct {
	classes []*resourceapi.DeviceClass
	byName  map[string]*resourceapi.DeviceClass
}

var _ structured.DeviceClassLister = (*ClassLister)(nil)

// NewClassLister returns a lister over classes; the first of duplicate
// names wins.
func NewClassLister(classes []*resourceapi.DeviceClass) *ClassLister {
	l := &ClassLister{classes: classes, byName: make(map[string]*resourceapi.DeviceClass, len(classes))}
	for _, c := range classes {
		if _, dup := l.byName[c.Name]; !dup {
			l.byName[c.Name] = c
		}
	}
	return l
}

// List returns all classes.
func (l *ClassLister) List() ([]*resourceapi.DeviceClass, error) { return l.classes, nil }

// Get returns the class called name.
func (l *ClassLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l.byName[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

// ClassLister returns a lister over s.DeviceClasses.
func (s *Scenario) ClassLister() *ClassLister { return NewClassLister(s.DeviceClasses) }

// AllocatedState computes the devices in use from AllocatedClaims'
// status.allocation the way kube-scheduler does: results with adminAccess
// do not count; with the ConsumableCapacity feature a result with a shareID
// adds a shared device ID and its consumed capacity, otherwise the device is
// allocated exclusively.
func (s *Scenario) AllocatedState() structured.AllocatedState {
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, c := range s.AllocatedClaims {
		if c == nil || c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if ptr.Deref(r.AdminAccess, false) {
				continue
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if s.Features.ConsumableCapacity && r.ShareID != nil {
				state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
				if r.ConsumedCapacity != nil {
					state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
				}
				continue
			}
			state.AllocatedDevices.Insert(id)
		}
	}
	return state
}

// Commit returns a copy of s in which Claims, allocated with results (one
// per claim, as Allocate returns them), have moved to AllocatedClaims and
// next are the claims to allocate. It is how a sequence of pods is played:
// each pod's claims are committed before the next pod is allocated.
func (s *Scenario) Commit(results []resourceapi.AllocationResult, next []*resourceapi.ResourceClaim) (*Scenario, error) {
	if len(results) != len(s.Claims) {
		return nil, fmt.Errorf("commit scenario %q: %d results for %d claims", s.Name, len(results), len(s.Claims))
	}
	out := *s
	out.AllocatedClaims = append(make([]*resourceapi.ResourceClaim, 0, len(s.AllocatedClaims)+len(s.Claims)), s.AllocatedClaims...)
	for i, c := range s.Claims {
		c = c.DeepCopy()
		c.Status.Allocation = results[i].DeepCopy()
		out.AllocatedClaims = append(out.AllocatedClaims, c)
	}
	out.Claims = next
	out.Satisfiable = nil
	return &out, nil
}

// AllocateFunc allocates s.Claims on s.Node: one result per claim, nil
// results with a nil error when they do not fit, an error for invalid input.
type AllocateFunc func(ctx context.Context, s *Scenario) ([]resourceapi.AllocationResult, error)

// OneByOne plays s.Claims as pods that arrive one after another: each claim
// is allocated alone and, when it fits, committed before the next. It
// returns one entry per claim, nil for a claim that did not fit, and the
// scenario with every fitted claim committed. An error from allocate stops
// the play and is returned, wrapped with the claim's name.
func (s *Scenario) OneByOne(ctx context.Context, allocate AllocateFunc) ([]*resourceapi.AllocationResult, *Scenario, error) {
	out := make([]*resourceapi.AllocationResult, len(s.Claims))
	cur := *s
	cur.Satisfiable = nil
	state := &cur
	for i, c := range s.Claims {
		state.Claims = []*resourceapi.ResourceClaim{c}
		results, err := allocate(ctx, state)
		if err != nil {
			return nil, nil, fmt.Errorf("allocate claim %s/%s: %w", c.Namespace, c.Name, err)
		}
		if results == nil {
			continue
		}
		next, err := state.Commit(results, nil)
		if err != nil {
			return nil, nil, err
		}
		out[i] = next.AllocatedClaims[len(next.AllocatedClaims)-1].Status.Allocation
		state = next
	}
	state.Claims = nil
	return out, state, nil
}
