package allocator

import (
	"context"
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
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
	// selectors caches parsed node selectors (nodeSelector).
	selectors sync.Map // *v1.NodeSelector → parsedSelector

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
