package kit

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/observe"
)

// allNodes is the node key of devices that are not local to one node.
const AllNodes = "(all nodes)"

// publishedDevice is one device of the driver, as its ResourceSlices say.
type PublishedDevice struct {
	// Node is the slice's spec.nodeName, or allNodes for devices that are
	// not local to one node.
	Node       string
	Pool       string
	Name       string
	Attributes map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	Capacity   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
	// Consumes is what the device draws from its pool's counter sets
	// (KEP-4815); empty for devices that consume no counters.
	Consumes []resourceapi.DeviceCounterConsumption
	// MultipleAllocations is allowMultipleAllocations (KEP-5075): several
	// claims may share the device, each consuming part of its capacity.
	MultipleAllocations bool
}

// ID is driver-independent: pool/device, as in allocation results.
func (d PublishedDevice) ID() string { return d.Pool + "/" + d.Name }

// driverSlices returns the driver's ResourceSlices from the run's informer
// cache (startSliceInformer), which follows the API server within
// milliseconds; without one, from the API server. Callers only read them.
func (s *Suite) DriverSlices(ctx context.Context) ([]resourceapi.ResourceSlice, error) {
	if s.sliceLister == nil {
		return ListDriverSlices(ctx, s.Kube, s.Driver.DriverName)
	}
	cached, err := s.sliceLister.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list ResourceSlices of driver %s from the cache: %w", s.Driver.DriverName, err)
	}
	out := make([]resourceapi.ResourceSlice, 0, len(cached))
	for _, sl := range cached {
		if sl.Spec.Driver == s.Driver.DriverName {
			out = append(out, *sl)
		}
	}
	return out, nil
}

// startSliceInformer starts an informer on the driver's ResourceSlices for
// the run and waits, within the API timeout, for its first list: the steps
// read the driver's devices many times, and each list of a node's slices
// costs the API server hundreds of kilobytes to encode. stop ends it.
func (s *Suite) startSliceInformer(ctx context.Context, stop <-chan struct{}) error {
	factory := informers.NewSharedInformerFactoryWithOptions(s.Kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector(resourceapi.ResourceSliceSelectorDriver, s.Driver.DriverName).String()
	}))
	inf := factory.Resource().V1().ResourceSlices()
	lister, informer := inf.Lister(), inf.Informer()
	factory.Start(stop)
	wctx, cancel := context.WithTimeout(ctx, s.Cfg.Timeouts.API)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), informer.HasSynced) {
		return fmt.Errorf("watch the ResourceSlices of driver %s: no first list within %v", s.Driver.DriverName, s.Cfg.Timeouts.API)
	}
	s.sliceLister = lister
	return nil
}

// listDriverSlices returns the ResourceSlices of driver.
func ListDriverSlices(ctx context.Context, kube kubernetes.Interface, driver string) ([]resourceapi.ResourceSlice, error) {
	list, err := kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(resourceapi.ResourceSliceSelectorDriver, driver).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("list ResourceSlices of driver %s: %w", driver, err)
	}
	// Field selectors are an optimization; filter again in case a server
	// (or a fake) ignores them.
	out := list.Items[:0]
	for _, s := range list.Items {
		if s.Spec.Driver == driver {
			out = append(out, s)
		}
	}
	return out, nil
}

// publishedDevices flattens the driver's slices into devices. Per pool only
// the slices of the highest generation count, as for the scheduler. The
// result is sorted by node, pool and name.
func publishedDevices(slices []resourceapi.ResourceSlice, driver string) []PublishedDevice {
	latest := map[string]int64{}
	for _, s := range slices {
		if s.Spec.Driver != driver {
			continue
		}
		if g, ok := latest[s.Spec.Pool.Name]; !ok || s.Spec.Pool.Generation > g {
			latest[s.Spec.Pool.Name] = s.Spec.Pool.Generation
		}
	}
	var out []PublishedDevice
	for _, s := range slices {
		if s.Spec.Driver != driver || s.Spec.Pool.Generation != latest[s.Spec.Pool.Name] {
			continue
		}
		node := AllNodes
		if s.Spec.NodeName != nil && *s.Spec.NodeName != "" {
			node = *s.Spec.NodeName
		}
		for _, d := range s.Spec.Devices {
			devNode := node
			if d.NodeName != nil && *d.NodeName != "" {
				devNode = *d.NodeName
			}
			out = append(out, PublishedDevice{Node: devNode, Pool: s.Spec.Pool.Name, Name: d.Name,
				Attributes: d.Attributes, Capacity: d.Capacity, Consumes: d.ConsumesCounters,
				MultipleAllocations: ptr.Deref(d.AllowMultipleAllocations, false)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Pool != b.Pool {
			return a.Pool < b.Pool
		}
		return a.Name < b.Name
	})
	return out
}

// findDevice returns the published device named in an allocation result.
func FindDevice(devices []PublishedDevice, pool, name string) (PublishedDevice, bool) {
	for _, d := range devices {
		if d.Pool == pool && d.Name == name {
			return d, true
		}
	}
	return PublishedDevice{}, false
}

// maxDevicesOnOneNode is the largest number of devices any single node can
// use: its own devices plus those available to all nodes.
func MaxDevicesOnOneNode(devices []PublishedDevice) int {
	perNode := map[string]int{}
	shared := 0
	for _, d := range devices {
		if d.Node == AllNodes {
			shared++
			continue
		}
		perNode[d.Node]++
	}
	most := 0
	for _, n := range perNode {
		most = max(most, n)
	}
	return most + shared
}

// devicesSharingAttribute finds n devices on one node with the same value of
// attr. It returns the group with the most devices, ties broken by node and
// value order, or false when no node has n such devices.
func devicesSharingAttribute(devices []PublishedDevice, driver, attr string, n int) ([]PublishedDevice, bool) {
	type key struct{ node, value string }
	groups := map[key][]PublishedDevice{}
	for _, d := range devices {
		a, ok := observe.LookupAttribute(d.Attributes, driver, attr)
		if !ok {
			continue
		}
		k := key{d.Node, observe.AttributeString(a)}
		groups[k] = append(groups[k], d)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(groups[keys[i]]) != len(groups[keys[j]]) {
			return len(groups[keys[i]]) > len(groups[keys[j]])
		}
		if keys[i].node != keys[j].node {
			return keys[i].node < keys[j].node
		}
		return keys[i].value < keys[j].value
	})
	if len(keys) == 0 || len(groups[keys[0]]) < n {
		return nil, false
	}
	return groups[keys[0]][:n], true
}

// uuidSelector is a CEL expression that matches exactly the driver's device
// whose uuid attribute is uuid. It uses optional chaining so that devices
// without the attribute evaluate to false instead of failing the scheduler's
// filter (local-cluster.md §13).
func UuidSelector(driver, uuidAttr, uuid string) string {
	domain, name := observe.SplitAttribute(driver, uuidAttr)
	return fmt.Sprintf(`device.driver == %s && device.attributes[%s].?%s.orValue("") == %s`,
		strconv.Quote(driver), strconv.Quote(domain), name, strconv.Quote(uuid))
}

// counterSets returns the counter sets the driver's slices declare, by pool
// and set name; only the highest generation of each pool counts.
func CounterSets(slices []resourceapi.ResourceSlice, driver string) map[string]map[string]resourceapi.CounterSet {
	latest := map[string]int64{}
	for _, s := range slices {
		if s.Spec.Driver == driver {
			if g, ok := latest[s.Spec.Pool.Name]; !ok || s.Spec.Pool.Generation > g {
				latest[s.Spec.Pool.Name] = s.Spec.Pool.Generation
			}
		}
	}
	out := map[string]map[string]resourceapi.CounterSet{}
	for _, s := range slices {
		if s.Spec.Driver != driver || s.Spec.Pool.Generation != latest[s.Spec.Pool.Name] {
			continue
		}
		for _, cs := range s.Spec.SharedCounters {
			if out[s.Spec.Pool.Name] == nil {
				out[s.Spec.Pool.Name] = map[string]resourceapi.CounterSet{}
			}
			out[s.Spec.Pool.Name][cs.Name] = cs
		}
	}
	return out
}

// Standard attributes of k8s.io/dynamic-resource-allocation/deviceattribute.
const (
	PcieRootAttribute = "resource.kubernetes.io/pcieRoot"
	PciBusIDAttribute = "resource.kubernetes.io/pciBusID"
)

// sliceDevice finds an allocated device's attributes in the slices.
func SliceDevice(items []resourceapi.ResourceSlice, r resourceapi.DeviceRequestAllocationResult) (map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, bool) {
	if d := FindSliceDevice(items, r); d != nil {
		return d.Attributes, true
	}
	return nil, false
}

// findSliceDevice is the allocated device as the slices publish it, nil
// when none does.
func FindSliceDevice(items []resourceapi.ResourceSlice, r resourceapi.DeviceRequestAllocationResult) *resourceapi.Device {
	for i := range items {
		s := &items[i]
		if s.Spec.Driver != r.Driver || s.Spec.Pool.Name != r.Pool {
			continue
		}
		if j := slices.IndexFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == r.Device }); j >= 0 {
			return &s.Spec.Devices[j]
		}
	}
	return nil
}

func StringAttr(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, name string) string {
	if a, ok := attrs[resourceapi.QualifiedName(name)]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}
