package driver

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
)

// API limits (docs: dra-1.37-spec.md §0.3).
const (
	maxDevicesPerSlice = 128
	maxStringAttribute = 64
)

// Counter sets per slice and devices per slice when a device consumes
// counters, has taints or a list attribute (dra-1.37-spec.md §0.3, §5).
const (
	maxCounterSetsPerSlice      = 8
	maxConsumingDevicesPerSlice = 64
)

// Published names: the type attribute's values, the profile of the full GPU
// of a partitioned GPU, compatibility groups, counters (DNS labels, as
// NVIDIA's DRA driver names them) and capacities.
const (
	deviceTypeGPU                = "gpu"
	deviceTypeMIG                = "mig"
	fullGPUProfile               = "full"
	compatibilityGroupFull       = "full-gpu"
	compatibilityGroupPartitions = "mig"
	partitionTypeAttributeName   = "profile"
	closeNUMANodesAttributeName  = "closeNUMANodes"

	counterMemory      = "memory"
	counterSMs         = "multiprocessors"
	counterCopyEngines = "copy-engines"
	counterDecoders    = "decoders"
	counterEncoders    = "encoders"
	counterJPEGs       = "jpeg-engines"
	counterOFAs        = "ofa-engines"

	capacitySMs      = "multiprocessors"
	capacityCEs      = "copyEngines"
	capacityDecoders = "decoders"
	capacityEncoders = "encoders"
	capacityJPG      = "jpegEngines"
	capacityOFAs     = "ofaEngines"
)

// publishOptions tune what buildResources publishes.
type publishOptions struct {
	// DriverName qualifies the partition type attribute.
	DriverName string
	// PartitionAlpha sets the alpha fields of partitionable devices:
	// partitionTypeAttribute (KEP-4815's gate DRAPartitionableDevicesType)
	// and compatibilityGroups (KEP-5963).
	PartitionAlpha bool
	// BindingConditions publishes every device with the binding conditions
	// of BindingConditionTypes (KEP-5007).
	BindingConditions bool
	// Owned are the GPU instances the driver created (checkpoint); they
	// do not make a GPU static.
	Owned map[ownedPlacement]bool
	// Status is the health of the devices by name (nil: all healthy):
	// their taints are published, withdrawn devices are not.
	Status map[string]deviceStatus
}

// NodeResources returns the pool a driver named driverName publishes on
// the node nodeName for the GPUs disc discovers when it starts without
// prepared claims, as Run publishes it (partitionableAlpha is
// Config.PartitionableAlpha). reference/simulate publishes it for
// simulated nodes.
func NodeResources(ctx context.Context, disc Discoverer, driverName, nodeName string, partitionableAlpha bool) (resourceslice.DriverResources, error) {
	inv, err := discover(ctx, disc)
	if err != nil {
		return resourceslice.DriverResources{}, err
	}
	res, err := buildResources(nodeName, inv, publishOptions{DriverName: driverName, PartitionAlpha: partitionableAlpha})
	if err != nil {
		return resourceslice.DriverResources{}, fmt.Errorf("build ResourceSlices: %w", err)
	}
	return res, nil
}

// buildResources turns the inventory into one pool named poolName: counter
// sets in slices of their own (at most 8 per slice), devices in slices of at
// most 128, or 64 when a device of the slice consumes counters, has
// taints or a list attribute. Devices opts.Status withdraws are left out, and so is the counter
// set of a GPU none of whose devices is left.
func buildResources(poolName string, inv *Inventory, opts publishOptions) (resourceslice.DriverResources, error) {
	driverVersion, err := semver(inv.DriverVersion)
	if err != nil {
		return resourceslice.DriverResources{}, fmt.Errorf("driver version: %w", err)
	}
	if inv.CUDADriverVersion <= 0 {
		return resourceslice.DriverResources{}, fmt.Errorf("CUDA driver version %d is not positive", inv.CUDADriverVersion)
	}
	// NVML encodes CUDA 12.8 as 12080.
	cudaVersion := fmt.Sprintf("%d.%d.0", inv.CUDADriverVersion/1000, inv.CUDADriverVersion%1000/10)
	devs, err := inv.devices(opts.Owned)
	if err != nil {
		return resourceslice.DriverResources{}, err
	}

	pool := resourceslice.Pool{}
	var counterSets []resourceapi.CounterSet
	counted := map[int]bool{} // GPU minors whose counter set exists
	var slice resourceslice.Slice
	consuming, tainted, listed := false, false, false
	flush := func() {
		if consuming && opts.PartitionAlpha {
			slice.PartitionTypeAttribute = ptr.To(resourceapi.FullyQualifiedName(opts.DriverName + "/" + partitionTypeAttributeName))
		}
		pool.Slices = append(pool.Slices, slice)
		slice, consuming, tainted, listed = resourceslice.Slice{}, false, false, false
	}
	for i := range devs {
		d := &devs[i]
		status := opts.Status[d.Name]
		if status.Withdrawn {
			continue
		}
		dev, err := apiDevice(d, driverVersion, cudaVersion)
		if err != nil {
			return resourceslice.DriverResources{}, err
		}
		dev.Taints = status.Taints
		if opts.BindingConditions {
			dev.BindingConditions, dev.BindingFailureConditions = BindingConditionTypes(opts.DriverName)
		}
		if d.Partitioned {
			if !counted[d.GPU.Minor] {
				counted[d.GPU.Minor] = true
				counterSets = append(counterSets, resourceapi.CounterSet{Name: counterSetName(d.GPU), Counters: gpuCounters(d.GPU)})
			}
			dev.ConsumesCounters = []resourceapi.DeviceCounterConsumption{consumption(d)}
			if opts.PartitionAlpha {
				group := compatibilityGroupPartitions
				if d.Kind == kindGPU {
					group = compatibilityGroupFull
				}
				dev.ConsumesCounters[0].CompatibilityGroups = []string{group}
			}
		}
		limit := maxDevicesPerSlice
		if consuming || d.Partitioned || tainted || len(dev.Taints) > 0 || listed || len(d.GPU.CloseNUMANodes) > 0 {
			limit = maxConsumingDevicesPerSlice
		}
		if len(slice.Devices)+1 > limit {
			flush()
		}
		consuming = consuming || d.Partitioned
		tainted = tainted || len(dev.Taints) > 0
		listed = listed || len(d.GPU.CloseNUMANodes) > 0
		slice.Devices = append(slice.Devices, dev)
	}
	// At least one device slice per pool, even an empty one: "no devices"
	// differs from "no pool".
	if len(slice.Devices) > 0 || len(pool.Slices) == 0 {
		flush()
	}
	for len(counterSets) > 0 {
		n := min(len(counterSets), maxCounterSetsPerSlice)
		pool.Slices = append(pool.Slices, resourceslice.Slice{SharedCounters: counterSets[:n]})
		counterSets = counterSets[n:]
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{poolName: pool}}, nil
}

// apiDevice builds a device's attributes and capacity (no counters).
func apiDevice(d *device, driverVersion, cudaVersion string) (resourceapi.Device, error) {
	g := d.GPU
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"productName":           {StringValue: ptr.To(truncate(g.ProductName))},
		"architecture":          {StringValue: ptr.To(truncate(g.Architecture))},
		"brand":                 {StringValue: ptr.To(truncate(g.Brand))},
		"driverVersion":         {VersionValue: ptr.To(driverVersion)},
		"cudaDriverVersion":     {VersionValue: ptr.To(cudaVersion)},
		"cudaComputeCapability": {VersionValue: ptr.To(fmt.Sprintf("%d.%d.0", g.CCMajor, g.CCMinor))},
		deviceattribute.StandardDeviceAttributePCIBusID: {StringValue: ptr.To(g.PCIBusID)},
	}
	if g.PCIeRoot != "" {
		attrs[deviceattribute.StandardDeviceAttributePCIeRoot] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.PCIeRoot)}
	}
	if g.NUMANode >= 0 {
		attrs[deviceattribute.StandardDeviceAttributeNUMANode] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.NUMANode))}
	}
	if len(g.CloseNUMANodes) > 0 {
		attrs[closeNUMANodesAttributeName] = resourceapi.DeviceAttribute{IntValues: slices.Clone(g.CloseNUMANodes)}
	}
	fabricAttributes(g, attrs)
	var memory uint64
	capacity := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
	switch d.Kind {
	case kindGPU:
		attrs["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To(deviceTypeGPU)}
		attrs["uuid"] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.UUID)}
		attrs["minor"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.Minor))}
		attrs["index"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.Index))}
		if d.Partitioned {
			attrs[partitionTypeAttributeName] = resourceapi.DeviceAttribute{StringValue: ptr.To(fullGPUProfile)}
		}
		memory = g.MemoryBytes
	case kindMIGPartition:
		p := d.Profile
		attrs["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To(deviceTypeMIG)}
		attrs[partitionTypeAttributeName] = resourceapi.DeviceAttribute{StringValue: ptr.To(truncate(p.Name))}
		attrs["profileID"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(p.Info.Id))}
		attrs["parentUUID"] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.UUID)}
		attrs["parentMinor"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.Minor))}
		attrs["parentIndex"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.Index))}
		attrs["placementStart"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(d.Placement.Start))}
		attrs["placementSize"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(d.Placement.Size))}
		for name, v := range map[resourceapi.QualifiedName]uint32{
			capacitySMs: p.Info.MultiprocessorCount, capacityCEs: p.Info.CopyEngineCount,
			capacityDecoders: p.Info.DecoderCount, capacityEncoders: p.Info.EncoderCount,
			capacityJPG: p.Info.JpegCount, capacityOFAs: p.Info.OfaCount,
		} {
			capacity[name] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(v), resource.DecimalSI)}
		}
		memory = p.Info.MemorySizeMB << 20
	case kindMIGStatic:
		inst := d.Instance
		attrs["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To(deviceTypeMIG)}
		attrs[partitionTypeAttributeName] = resourceapi.DeviceAttribute{StringValue: ptr.To(truncate(inst.Name))}
		attrs["profileID"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(inst.ProfileID))}
		attrs["uuid"] = resourceapi.DeviceAttribute{StringValue: ptr.To(inst.UUID)}
		attrs["parentUUID"] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.UUID)}
		attrs["parentMinor"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.Minor))}
		attrs["parentIndex"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.Index))}
		attrs["placementStart"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(inst.Start))}
		attrs["placementSize"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(inst.Size))}
		attrs["gpuInstance"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(inst.GI))}
		attrs["computeInstance"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(inst.CI))}
		memory = inst.MemoryBytes
	}
	if memory > 0 {
		if memory > math.MaxInt64 {
			return resourceapi.Device{}, fmt.Errorf("device %s: memory %d bytes does not fit a quantity", d.Name, memory)
		}
		capacity["memory"] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(memory), resource.BinarySI)}
	}
	dev := resourceapi.Device{Name: d.Name, Attributes: attrs}
	if len(capacity) > 0 {
		dev.Capacity = capacity
	}
	return dev, nil
}

// counterSetName is gpu-<minor>-counter-set, as NVIDIA's DRA driver names it.
func counterSetName(g *GPU) string { return fmt.Sprintf("gpu-%d-counter-set", g.Minor) }

// memorySliceCounter is memory-slice-<i>, as NVIDIA's DRA driver names it.
func memorySliceCounter(i int) string { return fmt.Sprintf("memory-slice-%d", i) }

// profileCounters are a GI profile's engine and memory counters, zero ones
// left out.
func profileCounters(info nvml.GpuInstanceProfileInfo) map[string]resourceapi.Counter {
	out := map[string]resourceapi.Counter{}
	for name, v := range map[string]uint64{
		counterSMs: uint64(info.MultiprocessorCount), counterCopyEngines: uint64(info.CopyEngineCount),
		counterDecoders: uint64(info.DecoderCount), counterEncoders: uint64(info.EncoderCount),
		counterJPEGs: uint64(info.JpegCount), counterOFAs: uint64(info.OfaCount),
		counterMemory: info.MemorySizeMB << 20,
	} {
		format := resource.DecimalSI
		if name == counterMemory {
			format = resource.BinarySI
		}
		if v > 0 {
			out[name] = resourceapi.Counter{Value: *resource.NewQuantity(int64(v), format)}
		}
	}
	return out
}

// gpuCounters is a GPU's counter set, as NVIDIA's DRA driver builds it: per
// engine kind and memory the largest amount any profile has, plus one
// counter of value 1 per memory slice any placement covers.
func gpuCounters(g *GPU) map[string]resourceapi.Counter {
	out := map[string]resourceapi.Counter{}
	slices := 0
	for _, p := range g.MIG.Profiles {
		for name, c := range profileCounters(p.Info) {
			if old, ok := out[name]; !ok || c.Value.Cmp(old.Value) > 0 {
				out[name] = c
			}
		}
		for _, pl := range p.Placements {
			slices = max(slices, int(pl.Start+pl.Size))
		}
	}
	for i := range slices {
		out[memorySliceCounter(i)] = resourceapi.Counter{Value: *resource.NewQuantity(1, resource.DecimalSI)}
	}
	return out
}

// consumption is what a partitioned device draws from its GPU's counter
// set: everything for the full GPU, the profile's amounts plus the covered
// memory slices for a partition.
func consumption(d *device) resourceapi.DeviceCounterConsumption {
	c := resourceapi.DeviceCounterConsumption{CounterSet: counterSetName(d.GPU)}
	if d.Kind == kindGPU {
		c.Counters = gpuCounters(d.GPU)
		return c
	}
	c.Counters = profileCounters(d.Profile.Info)
	for i := d.Placement.Start; i < d.Placement.Start+d.Placement.Size; i++ {
		c.Counters[memorySliceCounter(int(i))] = resourceapi.Counter{Value: *resource.NewQuantity(1, resource.DecimalSI)}
	}
	return c
}

// semver turns an NVIDIA version (570.172.08, 12.8) into the semantic version
// the API accepts (570.172.8, 12.8.0): 1 to 3 numeric parts, leading zeros
// dropped, missing parts zero.
func semver(v string) (string, error) {
	parts := strings.Split(v, ".")
	if len(parts) > 3 {
		return "", fmt.Errorf("version %q has more than 3 parts", v)
	}
	out := make([]string, 3)
	for i := range out {
		out[i] = "0"
		if i >= len(parts) {
			continue
		}
		n, err := strconv.ParseUint(parts[i], 10, 64)
		if err != nil {
			return "", fmt.Errorf("version %q: part %q is not a number", v, parts[i])
		}
		out[i] = strconv.FormatUint(n, 10)
	}
	return strings.Join(out, "."), nil
}

// truncate cuts s to the API's string attribute limit on a rune boundary.
func truncate(s string) string {
	if len(s) <= maxStringAttribute {
		return s
	}
	s = s[:maxStringAttribute]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
