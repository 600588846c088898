package allocator

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

const (
	testDriver = "gpu.example.com"
	testNode   = "node-1"
)

// instance is one Allocate input built inline from API types.
type instance struct {
	features structured.Features
	classes  []*resourceapi.DeviceClass
	slices   []*resourceapi.ResourceSlice
	claims   []*resourceapi.ResourceClaim
	state    structured.AllocatedState
}

type classList []*resourceapi.DeviceClass

func (l classList) List() ([]*resourceapi.DeviceClass, error) { return l, nil }
func (l classList) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

var defaultFeatures = structured.Features{
	AdminAccess: true, PrioritizedList: true, PartitionableDevices: true, DeviceTaints: true,
	DeviceBindingAndStatus: true, ConsumableCapacity: true, FractionalCapacityRange: true,
}

func testNodeObj() *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{"region": "r1"}}}
}

func gpuClass(name string, selectors ...string) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Spec.Selectors = cels(append([]string{`device.driver == "` + testDriver + `"`}, selectors...)...)
	return c
}

func cels(exprs ...string) []resourceapi.DeviceSelector {
	var out []resourceapi.DeviceSelector
	for _, e := range exprs {
		out = append(out, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return out
}

func req(name, class string, count int64, selectors ...string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count, Selectors: cels(selectors...),
	}}
}

func claimOf(name string, constraints []resourceapi.DeviceConstraint, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + "name"}}
	c.Spec.Devices.Requests = requests
	c.Spec.Devices.Constraints = constraints
	return c
}

func matchAttr(attr string, requests ...string) []resourceapi.DeviceConstraint {
	a := resourceapi.FullyQualifiedName(attr)
	return []resourceapi.DeviceConstraint{{Requests: requests, MatchAttribute: &a}}
}

func intAttr(v int64) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{IntValue: &v} }
func boolAttr(v bool) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{BoolValue: &v} }
func strAttr(v string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: &v}
}

func gpuDevice(i int, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) resourceapi.Device {
	d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"index": intAttr(int64(i)), "special": boolAttr(false), "numa": intAttr(0),
		"model": strAttr("H100"), "driverVersion": {VersionValue: ptr.To("1.2.3")},
	}}
	for k, v := range attrs {
		d.Attributes[k] = v
	}
	return d
}

func nodeSlice(name string, sliceCount int64, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}}
	s.Spec.Driver = testDriver
	s.Spec.Pool = resourceapi.ResourcePool{Name: testNode, Generation: 1, ResourceSliceCount: sliceCount}
	s.Spec.NodeName = ptr.To(testNode)
	s.Spec.Devices = devices
	return s
}

func (in instance) newRef(t testing.TB, opts Options) *Allocator {
	t.Helper()
	a, err := NewWithOptions(context.Background(), opts, in.features, in.state, classList(in.classes), in.slices, cel.NewCache(10, cel.Features{}))
	if err != nil {
		t.Fatalf("create reference allocator: %v", err)
	}
	return a
}

func (in instance) newUpstream(t testing.TB) structured.Allocator {
	t.Helper()
	a, err := structured.NewAllocator(context.Background(), in.features, in.state, classList(in.classes), in.slices, cel.NewCache(10, cel.Features{}))
	if err != nil {
		t.Fatalf("create upstream allocator: %v", err)
	}
	return a
}

// commit adds the devices of results to the allocated state, the way the
// scheduler records allocated claims.
func commit(state *structured.AllocatedState, results []resourceapi.AllocationResult) {
	if state.AllocatedDevices == nil {
		state.AllocatedDevices = sets.New[structured.DeviceID]()
	}
	for _, r := range results {
		for _, d := range r.Devices.Results {
			state.AllocatedDevices.Insert(structured.MakeDeviceID(d.Driver, d.Pool, d.Device))
		}
	}
}

func quantity(s string) resource.Quantity { return resource.MustParse(s) }
