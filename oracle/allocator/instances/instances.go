package instances

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/oracle/allocator/scenario"
)

// Names shared by every generated instance.
const (
	Driver    = "gpu.example.com"
	ClassName = "gpu.example.com"
	Namespace = "default"
	// NodeName is the node every single-node instance allocates on.
	NodeName = "node-0"
	// MaxResults is the allocators' limit of devices per claim
	// (AllocationResultsMaxSize).
	MaxResults = 32
)

// SchedulerFeatures is the feature set kube-scheduler 1.37 passes with its
// default feature gates (AdminAccess, DeviceTaints, PartitionableDevices,
// PrioritizedList, and the beta ConsumableCapacity, DeviceBindingAndStatus
// and FractionalCapacityRange); with it structured.NewAllocator picks the
// incubating variant, the one the scheduler runs. Every instance uses it.
func SchedulerFeatures() scenario.Features {
	return scenario.Features{
		AdminAccess:             true,
		ConsumableCapacity:      true,
		DeviceBindingAndStatus:  true,
		DeviceTaints:            true,
		FractionalCapacityRange: true,
		PartitionableDevices:    true,
		PrioritizedList:         true,
	}
}

// ErrBadParameter is wrapped by every error about a generator's parameters.
var ErrBadParameter = errors.New("bad instance parameter")

// Family is one instance family with two size parameters n and k.
type Family struct {
	// Name is what Generate and `drakit allocate generate --family` take.
	Name string
	// Description says what the instance is and why it is hard.
	Description string
	// N and K say what the two parameters mean.
	N, K string
	// Sizes are the (n, k) pairs the anchors measured, plus sizes up to 128
	// devices; tests and benchmarks sweep them.
	Sizes []Size
	// OneByOne marks families whose claims are pods that arrive one at a
	// time (scenario.OneByOne); Satisfiable then says whether all pods fit
	// together, which a good allocator also achieves one by one.
	OneByOne bool
	// New generates the (n, k) instance.
	New func(n, k int) (*scenario.Scenario, error)
}

// Size is one (n, k) parameter pair.
type Size struct{ N, K int }

func (s Size) String() string { return fmt.Sprintf("n=%d,k=%d", s.N, s.K) }

// Families returns every family, in the order of allocator-anchors.md.
func Families() []Family {
	return []Family{
		{Name: "H1", N: "devices", K: "count of the big request",
			Description: "one claim: request big (count k, class only), then request special that only device 0 satisfies",
			Sizes:       sizes(8, 7, 10, 9, 12, 11, 16, 8, 20, 10, 24, 12, 28, 14, 32, 15, 64, 31, 128, 31),
			New:         H1},
		{Name: "H2", N: "devices", K: "single-device claims before the special claim",
			Description: "k single-device claims, then a claim only device 0 satisfies",
			Sizes:       sizes(8, 7, 10, 8, 12, 8, 16, 6, 16, 8, 32, 5, 64, 16, 128, 32),
			New:         H2},
		{Name: "H3", N: "devices (half on numa 0, half on numa 1)", K: "count of request a",
			Description: "one claim: request a (count k), request b (numa == 1), matchAttribute numa over both",
			Sizes:       sizes(16, 4, 24, 6, 32, 8, 40, 10, 48, 12, 64, 16, 128, 8, 128, 31),
			New:         H3},
		{Name: "H3b", N: "devices (half on numa 0, half on numa 1)", K: "single-device requests before the numa-1 request",
			Description: "one claim: k one-device requests, then request b (numa == 1), matchAttribute numa over all",
			Sizes:       sizes(16, 4, 24, 4, 32, 4, 32, 5, 48, 5, 64, 5, 128, 8, 128, 31),
			New:         H3b},
		{Name: "H4", N: "partitionable devices", K: "count",
			Description: "counters: device i uses its own cpu counter and 10 units of a shared memory counter (device 1: 20), the pool has 10·k; one request of count k",
			Sizes:       sizes(8, 7, 12, 6, 16, 8, 20, 10, 24, 12, 28, 14, 64, 32, 128, 32),
			New:         H4},
		{Name: "H5", N: "devices", K: "single-device claims before the big claim",
			Description: "unsatisfiable: k single-device claims, then a claim for n-k+1 devices",
			Sizes:       sizes(8, 4, 8, 7, 12, 6, 16, 6, 32, 16, 64, 40, 128, 100),
			New:         H5},
		{Name: "H5c", N: "devices", K: "unused (0)",
			Description: "unsatisfiable: n+1 single-device claims on n devices (9 claims on 8 GPUs)",
			Sizes:       sizes(8, 0, 16, 0, 32, 0, 64, 0, 128, 0),
			New:         H5c},
		{Name: "frag-mig", N: "GPUs", K: "1g slices taken before the full GPU",
			Description: "MIG-like partitions listed interleaved across GPUs: k pods take a 1g slice each, then one pod takes a full 8g GPU; first fit spreads the slices over all GPUs",
			Sizes:       sizes(2, 2, 4, 4, 8, 8, 14, 14),
			OneByOne:    true,
			New:         FragMIG},
		{Name: "frag-numa", N: "GPUs, gpu-i on numa i", K: "unused (0)",
			Description: "one NIC, on numa 0: a pod for any GPU, then a pod for a GPU and a NIC on one NUMA node; first fit gives gpu-0 to the first pod and the second fails",
			Sizes:       sizes(2, 0, 4, 0, 8, 0, 16, 0),
			OneByOne:    true,
			New:         FragNUMA},
		{Name: "easy", N: "devices", K: "single-device claims",
			Description: "easy path: k single-device claims on n GPUs",
			Sizes:       sizes(8, 1, 8, 8, 64, 1, 128, 1),
			New:         Easy},
		{Name: "many-nodes", N: "devices per node", K: "nodes",
			Description: "easy path at cluster scale: one slice of n devices for each of k nodes; one single-device claim on the last node",
			Sizes:       sizes(10, 500),
			New:         ManyNodes},
	}
}

func sizes(nk ...int) []Size {
	out := make([]Size, 0, len(nk)/2)
	for i := 0; i+1 < len(nk); i += 2 {
		out = append(out, Size{nk[i], nk[i+1]})
	}
	return out
}

// Lookup returns the family called name (case-insensitive).
func Lookup(name string) (Family, bool) {
	for _, f := range Families() {
		if strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return Family{}, false
}

// Generate builds the (n, k) instance of the named family.
func Generate(family string, n, k int) (*scenario.Scenario, error) {
	f, ok := Lookup(family)
	if !ok {
		names := make([]string, 0, len(Families()))
		for _, f := range Families() {
			names = append(names, f.Name)
		}
		return nil, fmt.Errorf("%w: family %q: unknown; known families: %s", ErrBadParameter, family, strings.Join(names, ", "))
	}
	return f.New(n, k)
}

// H1 is one claim with request big (count k, class only) and then request
// special (count 1) that only device 0 satisfies. Satisfiable iff k < n.
func H1(n, k int) (*scenario.Scenario, error) {
	if err := checkRange("H1", n, k, rangeCheck{"n", n, 2, scenario.MaxDevicesPerSlice}, rangeCheck{"k", k, 1, MaxResults - 1}); err != nil {
		return nil, err
	}
	s := base(fmt.Sprintf("H1 n=%d k=%d", n, k), k < n, gpus(NodeName, n, halfNUMA(n)))
	s.Claims = []*resourceapi.ResourceClaim{claim("claim-0", nil,
		exact("big", k), exact("special", 1, specialSelector))}
	return s, nil
}

// H2 is k single-device claims and then one claim that only device 0
// satisfies. Satisfiable iff k < n.
func H2(n, k int) (*scenario.Scenario, error) {
	if err := checkRange("H2", n, k, rangeCheck{"n", n, 2, scenario.MaxDevicesPerSlice}, rangeCheck{"k", k, 1, scenario.MaxDevicesPerSlice}); err != nil {
		return nil, err
	}
	s := base(fmt.Sprintf("H2 n=%d k=%d", n, k), k < n, gpus(NodeName, n, halfNUMA(n)))
	for i := range k {
		s.Claims = append(s.Claims, claim(fmt.Sprintf("claim-%d", i), nil, exact("gpu", 1)))
	}
	s.Claims = append(s.Claims, claim(fmt.Sprintf("claim-%d", k), nil, exact("special", 1, specialSelector)))
	return s, nil
}

// H3 is one claim with request a (count k) and request b (count 1, numa ==
// 1), all requests on one NUMA node (matchAttribute numa). Devices 0..n/2-1
// are on numa 0, the rest on numa 1. Satisfiable iff k+1 <= n - n/2.
func H3(n, k int) (*scenario.Scenario, error) {
	if err := checkRange("H3", n, k, rangeCheck{"n", n, 2, scenario.MaxDevicesPerSlice}, rangeCheck{"k", k, 1, MaxResults - 1}); err != nil {
		return nil, err
	}
	s := base(fmt.Sprintf("H3 n=%d k=%d", n, k), k+1 <= n-n/2, gpus(NodeName, n, halfNUMA(n)))
	s.Claims = []*resourceapi.ResourceClaim{claim("claim-0", []resourceapi.DeviceConstraint{matchNUMA()},
		exact("a", k), exact("b", 1, numaSelector(1)))}
	return s, nil
}

// H3b is H3 with request a split into k one-device requests a0..a(k-1).
func H3b(n, k int) (*scenario.Scenario, error) {
	if err := checkRange("H3b", n, k, rangeCheck{"n", n, 2, scenario.MaxDevicesPerSlice}, rangeCheck{"k", k, 1, MaxResults - 1}); err != nil {
		return nil, err
	}
	s := base(fmt.Sprintf("H3b n=%d k=%d", n, k), k+1 <= n-n/2, gpus(NodeName, n, halfNUMA(n)))
	reqs := make([]resourceapi.DeviceRequest, 0, k+1)
	for i := range k {
		reqs = append(reqs, exact(fmt.Sprintf("a%d", i), 1))
	}
	reqs = append(reqs, exact("b", 1, numaSelector(1)))
	s.Claims = []*resourceapi.ResourceClaim{claim("claim-0", []resourceapi.DeviceConstraint{matchNUMA()}, reqs...)}
	return s, nil
}

// H4 is the scheduler_perf PartitionableBacktracking case generalised: n
// devices (device-1 … device-n) in one pool, device i consuming its own cpu
// counter and 10Gi of a shared 10·k Gi memory counter (device-1: 20Gi); one
// request of count k. Satisfiable iff k <= n-1 (device-1 cannot be used).
func H4(n, k int) (*scenario.Scenario, error) {
	if err := checkRange("H4", n, k, rangeCheck{"n", n, 2, scenario.MaxDevicesPerSlice}, rangeCheck{"k", k, 1, MaxResults}); err != nil {
		return nil, err
	}
	s := base(fmt.Sprintf("H4 n=%d k=%d", n, k), k <= n-1, nil)
	pool := poolOf(NodeName)
	const cpusPerSet = 32
	var counterSets []resourceapi.CounterSet
	devices := make([]resourceapi.Device, 0, n)
	for i := 1; i <= n; i++ {
		set := fmt.Sprintf("cpu-%d", (i-1)/cpusPerSet)
		if (i-1)%cpusPerSet == 0 {
			counterSets = append(counterSets, resourceapi.CounterSet{Name: set, Counters: map[string]resourceapi.Counter{}})
		}
		cpu := fmt.Sprintf("cpu%d", i)
		counterSets[len(counterSets)-1].Counters[cpu] = resourceapi.Counter{Value: resource.MustParse("1")}
		mem := "10Gi"
		if i == 1 {
			mem = "20Gi"
		}
		d := basicDevice(i-1, 0)
		d.Name = fmt.Sprintf("device-%d", i)
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{
			{CounterSet: set, Counters: map[string]resourceapi.Counter{cpu: {Value: resource.MustParse("1")}}},
			{CounterSet: "mem", Counters: map[string]resourceapi.Counter{"mem": {Value: resource.MustParse(mem)}}},
		}
		devices = append(devices, d)
	}
	counterSets = append(counterSets, resourceapi.CounterSet{Name: "mem",
		Counters: map[string]resourceapi.Counter{"mem": {Value: resource.MustParse(fmt.Sprintf("%dGi", 10*k))}}})
	s.ResourceSlices = partitionedPool(NodeName, pool, counterSets, devices)
	s.Claims = []*resourceapi.ResourceClaim{claim("claim-0", nil, exact("req-0", k))}
	return s, nil
}

// H5 is k single-device claims and then one claim for n-k+1 devices on n
// devices: never satisfiable, the cost of proving it.
func H5(n, k int) (*scenario.Scenario, error) {
	if err := checkRange("H5", n, k, rangeCheck{"n", n, 2, scenario.MaxDevicesPerSlice}, rangeCheck{"k", k, max(1, n+1-MaxResults), n}); err != nil {
		return nil, err
	}
	s := base(fmt.Sprintf("H5 n=%d k=%d", n, k), false, gpus(NodeName, n, halfNUMA(n)))
	for i := range k {
		s.Claims = append(s.Claims, claim(fmt.Sprintf("claim-%d", i), nil, exact("gpu", 1)))
	}
	s.Claims = append(s.Claims, claim(fmt.Sprintf("claim-%d", k), nil, exact("gpus", n-k+1)))
	return s, nil
}

// H5c is n+1 single-device claims on n devices (k must be 0): never
// satisfiable; upstream permutes all n! orders across the claims.
func H5c(n, k int) (*scenario.Scenario, error) {
	if err := checkRange("H5c", n, k, rangeCheck{"n", n, 1, scenario.MaxDevicesPerSlice}, rangeCheck{"k", k, 0, 0}); err != nil {
		return nil, err
	}
	s := base(fmt.Sprintf("H5c n=%d", n), false, gpus(NodeName, n, halfNUMA(n)))
	for i := range n + 1 {
		s.Claims = append(s.Claims, claim(fmt.Sprintf("claim-%d", i), nil, exact("gpu", 1)))
	}
	return s, nil
}

// Easy is k single-device claims on n GPUs; satisfiable iff k <= n.
func Easy(n, k int) (*scenario.Scenario, error) {
	if err := checkRange("easy", n, k, rangeCheck{"n", n, 1, scenario.MaxDevicesPerSlice}, rangeCheck{"k", k, 1, scenario.MaxDevicesPerSlice}); err != nil {
		return nil, err
	}
	s := base(fmt.Sprintf("easy n=%d k=%d", n, k), k <= n, gpus(NodeName, n, halfNUMA(n)))
	for i := range k {
		s.Claims = append(s.Claims, claim(fmt.Sprintf("claim-%d", i), nil, exact("gpu", 1)))
	}
	return s, nil
}

// ManyNodes is one slice of n basic devices on each of k nodes (node-0 …
// node-(k-1)) and one single-device claim allocated on the last node.
func ManyNodes(n, k int) (*scenario.Scenario, error) {
	if err := checkRange("many-nodes", n, k, rangeCheck{"n", n, 1, scenario.MaxDevicesPerSlice}, rangeCheck{"k", k, 1, 100000}); err != nil {
		return nil, err
	}
	s := base(fmt.Sprintf("many-nodes n=%d k=%d", n, k), true, nil)
	s.Node = node(fmt.Sprintf("node-%d", k-1))
	for i := range k {
		s.ResourceSlices = append(s.ResourceSlices, gpus(fmt.Sprintf("node-%d", i), n, halfNUMA(n))...)
	}
	s.Claims = []*resourceapi.ResourceClaim{claim("claim-0", nil, exact("gpu", 1))}
	return s, nil
}

// FragMIG is §3.5's MIG-like case on n GPUs: each GPU has a counter set of
// eight memory slices m0..m7; each GPU offers a 1g device per slice and
// an 8g device that uses all eight. The slice devices are listed
// interleaved across GPUs (gpu0 1g s0, gpu1 1g s0, …) and the 8g devices
// come last. Claims (pods, one by one): k claims for a 1g device, then one
// claim for an 8g device. Satisfiable iff k <= 8·(n-1): the slices fit on
// n-1 GPUs and one GPU stays whole. First fit spreads the first n slices
// over all GPUs when k >= n, so the 8g pod fails.
func FragMIG(n, k int) (*scenario.Scenario, error) {
	if err := checkRange("frag-mig", n, k, rangeCheck{"n", n, 2, scenario.MaxDevicesPerSlice / 9}, rangeCheck{"k", k, 1, 8 * n}); err != nil {
		return nil, err
	}
	const slots = 8
	s := base(fmt.Sprintf("frag-mig n=%d k=%d", n, k), k <= slots*(n-1), nil)
	s.DeviceClasses = append(s.DeviceClasses, class("mig-1g", `device.attributes["gpu.example.com"].profile == "1g"`),
		class("mig-8g", `device.attributes["gpu.example.com"].profile == "8g"`))
	var counterSets []resourceapi.CounterSet
	for g := range n {
		cs := resourceapi.CounterSet{Name: fmt.Sprintf("gpu-%d", g), Counters: map[string]resourceapi.Counter{}}
		for m := range slots {
			cs.Counters[fmt.Sprintf("m%d", m)] = resourceapi.Counter{Value: resource.MustParse("1")}
		}
		counterSets = append(counterSets, cs)
	}
	migDevice := func(g int, profile, name string, counters []int) resourceapi.Device {
		d := basicDevice(g, g%2)
		d.Name = name
		d.Attributes["profile"] = resourceapi.DeviceAttribute{StringValue: ptr.To(profile)}
		cc := resourceapi.DeviceCounterConsumption{CounterSet: fmt.Sprintf("gpu-%d", g), Counters: map[string]resourceapi.Counter{}}
		for _, m := range counters {
			cc.Counters[fmt.Sprintf("m%d", m)] = resourceapi.Counter{Value: resource.MustParse("1")}
		}
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{cc}
		return d
	}
	var devices []resourceapi.Device
	for m := range slots {
		for g := range n {
			devices = append(devices, migDevice(g, "1g", fmt.Sprintf("gpu-%d-1g-%d", g, m), []int{m}))
		}
	}
	for g := range n {
		devices = append(devices, migDevice(g, "8g", fmt.Sprintf("gpu-%d-8g", g), []int{0, 1, 2, 3, 4, 5, 6, 7}))
	}
	s.ResourceSlices = partitionedPool(NodeName, poolOf(NodeName), counterSets, devices)
	for i := range k {
		s.Claims = append(s.Claims, claim(fmt.Sprintf("pod-%d-1g", i), nil, exactClass("slice", "mig-1g", 1)))
	}
	s.Claims = append(s.Claims, claim(fmt.Sprintf("pod-%d-8g", k), nil, exactClass("full", "mig-8g", 1)))
	return s, nil
}

// FragNUMA is §3.5's GPU+NIC case on n GPUs: gpu-i is on numa i, and there
// is one NIC, nic-0, on numa 0 (k must be 0). Claims (pods, one by one):
// one claim for any GPU, then one claim for a GPU and a NIC on the same
// NUMA node. Always satisfiable; first fit gives gpu-0 to the first pod and
// the second pod fails.
func FragNUMA(n, k int) (*scenario.Scenario, error) {
	if err := checkRange("frag-numa", n, k, rangeCheck{"n", n, 2, scenario.MaxDevicesPerSlice - 1}, rangeCheck{"k", k, 0, 0}); err != nil {
		return nil, err
	}
	s := base(fmt.Sprintf("frag-numa n=%d", n), true, nil)
	s.DeviceClasses = []*resourceapi.DeviceClass{
		class(ClassName, `device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].type == "gpu"`),
		class("nic.example.com", `device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].type == "nic"`),
	}
	devices := make([]resourceapi.Device, 0, n+1)
	for i := range n {
		devices = append(devices, basicDevice(i, i))
	}
	nic := basicDevice(n, 0)
	nic.Name = "nic-0"
	nic.Attributes["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To("nic")}
	devices = append(devices, nic)
	s.ResourceSlices = []*resourceapi.ResourceSlice{slice(NodeName+"-devices", NodeName, poolOf(NodeName), 1, devices, nil)}
	s.Claims = []*resourceapi.ResourceClaim{
		claim("pod-0-gpu", nil, exact("gpu", 1)),
		claim("pod-1-gpu-nic", []resourceapi.DeviceConstraint{matchNUMA()}, exact("gpu", 1), exactClass("nic", "nic.example.com", 1)),
	}
	return s, nil
}

type rangeCheck struct {
	name     string
	value    int
	min, max int
}

func checkRange(family string, n, k int, checks ...rangeCheck) error {
	for _, c := range checks {
		if c.value < c.min || c.value > c.max {
			return fmt.Errorf("%w: family %s n=%d k=%d: %s must be in [%d, %d]", ErrBadParameter, family, n, k, c.name, c.min, c.max)
		}
	}
	return nil
}

const (
	specialSelector = `device.attributes["gpu.example.com"].special`
	numaAttribute   = resourceapi.FullyQualifiedName("gpu.example.com/numa")
)

func numaSelector(numa int) string {
	return `device.attributes["gpu.example.com"].numa == ` + strconv.Itoa(numa)
}

func matchNUMA() resourceapi.DeviceConstraint {
	return resourceapi.DeviceConstraint{MatchAttribute: ptr.To(numaAttribute)}
}

// halfNUMA puts the first n/2 devices on numa 0 and the rest on numa 1.
func halfNUMA(n int) func(int) int {
	return func(i int) int {
		if i < n/2 {
			return 0
		}
		return 1
	}
}

func base(name string, satisfiable bool, slices []*resourceapi.ResourceSlice) *scenario.Scenario {
	return &scenario.Scenario{
		APIVersion:     scenario.APIVersion,
		Kind:           scenario.Kind,
		Name:           name,
		Satisfiable:    ptr.To(satisfiable),
		Features:       SchedulerFeatures(),
		Node:           node(NodeName),
		DeviceClasses:  []*resourceapi.DeviceClass{class(ClassName, `device.driver == "gpu.example.com"`)},
		ResourceSlices: slices,
	}
}

func node(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
}

func class(name, selector string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}}},
	}
}

func poolOf(nodeName string) string { return nodeName }

func slice(name, nodeName, pool string, count int64, devices []resourceapi.Device, counters []resourceapi.CounterSet) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:         Driver,
			Pool:           resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: count},
			NodeName:       ptr.To(nodeName),
			Devices:        devices,
			SharedCounters: counters,
		},
	}
}

// partitionedPool returns the slices of a pool with counter sets and
// devices that consume them, within the API's limits: counter sets in
// slices of their own, at most ResourceSliceMaxCounterSets per slice, then
// the devices in published order, at most
// ResourceSliceMaxDevicesWithAdvancedFeatures per slice. Slice names sort
// in that order, the order allocators visit them (the families' ranges give
// fewer than ten slices of each kind).
func partitionedPool(nodeName, pool string, counterSets []resourceapi.CounterSet, devices []resourceapi.Device) []*resourceapi.ResourceSlice {
	setChunks := slices.Collect(slices.Chunk(counterSets, resourceapi.ResourceSliceMaxCounterSets))
	devChunks := slices.Collect(slices.Chunk(devices, resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures))
	count := int64(len(setChunks) + len(devChunks))
	out := make([]*resourceapi.ResourceSlice, 0, count)
	for i, c := range setChunks {
		out = append(out, slice(fmt.Sprintf("%s-counters-%d", nodeName, i), nodeName, pool, count, nil, c))
	}
	for i, c := range devChunks {
		out = append(out, slice(fmt.Sprintf("%s-devices-%d", nodeName, i), nodeName, pool, count, c, nil))
	}
	return out
}

// gpus returns one slice of n basic devices gpu-0 … gpu-(n-1) on nodeName,
// device 0 special, device i on NUMA node numa(i).
func gpus(nodeName string, n int, numa func(int) int) []*resourceapi.ResourceSlice {
	devices := make([]resourceapi.Device, 0, n)
	for i := range n {
		devices = append(devices, basicDevice(i, numa(i)))
	}
	return []*resourceapi.ResourceSlice{slice(nodeName+"-gpus", nodeName, poolOf(nodeName), 1, devices, nil)}
}

// basicDevice is the scheduler_perf basic device (an Intel GPU's 14
// attributes and 2 capacities) with index, numa and special (true only for
// index 0) in place of its pciRoot variants.
func basicDevice(i, numa int) resourceapi.Device {
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: ptr.To(s)} }
	pci := fmt.Sprintf("0000:%02x:00.0", i)
	return resourceapi.Device{
		Name: fmt.Sprintf("gpu-%d", i),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"driver":                          str("xe"),
			"driverVersion":                   {VersionValue: ptr.To("1.2.3")},
			"family":                          str("Arc Pro B-Series"),
			"health":                          str("Healthy"),
			"model":                           str("B60"),
			"pciAddress":                      str(pci),
			"pciId":                           str("0xe211"),
			"pciRoot":                         str(fmt.Sprintf("0%d", numa)),
			"resource.kubernetes.io/pciBusID": str(pci),
			"sriov":                           {BoolValue: ptr.To(true)},
			"type":                            str("gpu"),
			"index":                           {IntValue: ptr.To(int64(i))},
			"numa":                            {IntValue: ptr.To(int64(numa))},
			"special":                         {BoolValue: ptr.To(i == 0)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory":     {Value: resource.MustParse("24480Mi")},
			"millicores": {Value: resource.MustParse("1k")},
		},
	}
}

func claim(name string, constraints []resourceapi.DeviceConstraint, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, UID: types.UID("uid-" + name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests:    slices.Clone(requests),
			Constraints: constraints,
		}},
	}
}

func exact(name string, count int, selectors ...string) resourceapi.DeviceRequest {
	return exactClass(name, ClassName, count, selectors...)
}

func exactClass(name, className string, count int, selectors ...string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: className,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           int64(count),
	}}
	for _, sel := range selectors {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: sel}})
	}
	return r
}
