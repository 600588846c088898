package driver

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

// API limits (docs: dra-1.37-spec.md §0.3).
const (
	maxDevicesPerSlice = 128
	maxStringAttribute = 64
)

// buildResources turns the inventory into one pool named poolName. Devices
// are split into slices of at most 128.
func buildResources(poolName string, inv *Inventory) (resourceslice.DriverResources, error) {
	driverVersion, err := semver(inv.DriverVersion)
	if err != nil {
		return resourceslice.DriverResources{}, fmt.Errorf("driver version: %w", err)
	}
	if inv.CUDADriverVersion <= 0 {
		return resourceslice.DriverResources{}, fmt.Errorf("CUDA driver version %d is not positive", inv.CUDADriverVersion)
	}
	// NVML encodes CUDA 12.8 as 12080.
	cudaVersion := fmt.Sprintf("%d.%d.0", inv.CUDADriverVersion/1000, inv.CUDADriverVersion%1000/10)

	pool := resourceslice.Pool{}
	var slice resourceslice.Slice
	for i := range inv.GPUs {
		g := &inv.GPUs[i]
		dev := resourceapi.Device{
			Name: g.DeviceName(),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"uuid":                  {StringValue: ptr(g.UUID)},
				"productName":           {StringValue: ptr(truncate(g.ProductName))},
				"architecture":          {StringValue: ptr(truncate(g.Architecture))},
				"brand":                 {StringValue: ptr(truncate(g.Brand))},
				"driverVersion":         {VersionValue: ptr(driverVersion)},
				"cudaDriverVersion":     {VersionValue: ptr(cudaVersion)},
				"cudaComputeCapability": {VersionValue: ptr(fmt.Sprintf("%d.%d.0", g.CCMajor, g.CCMinor))},
				"minor":                 {IntValue: ptr(int64(g.Minor))},
				"index":                 {IntValue: ptr(int64(g.Index))},
				deviceattribute.StandardDeviceAttributePCIBusID: {StringValue: ptr(g.PCIBusID)},
			},
		}
		if g.PCIeRoot != "" {
			dev.Attributes[deviceattribute.StandardDeviceAttributePCIeRoot] = resourceapi.DeviceAttribute{StringValue: ptr(g.PCIeRoot)}
		}
		if g.NUMANode >= 0 {
			dev.Attributes[deviceattribute.StandardDeviceAttributeNUMANode] = resourceapi.DeviceAttribute{IntValue: ptr(int64(g.NUMANode))}
		}
		if g.MemoryBytes > 0 {
			if g.MemoryBytes > math.MaxInt64 {
				return resourceslice.DriverResources{}, fmt.Errorf("GPU %s: memory %d bytes does not fit a quantity", g.UUID, g.MemoryBytes)
			}
			dev.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory": {Value: *resource.NewQuantity(int64(g.MemoryBytes), resource.BinarySI)},
			}
		}
		slice.Devices = append(slice.Devices, dev)
		if len(slice.Devices) == maxDevicesPerSlice {
			pool.Slices = append(pool.Slices, slice)
			slice = resourceslice.Slice{}
		}
	}
	// At least one slice per pool, even an empty one: "no devices" differs
	// from "no pool".
	if len(slice.Devices) > 0 || len(pool.Slices) == 0 {
		pool.Slices = append(pool.Slices, slice)
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{poolName: pool}}, nil
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

func ptr[T any](v T) *T { return &v }
