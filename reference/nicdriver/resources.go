package nicdriver

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// API limits (dra-1.37-spec.md §0.3): devices per slice (no device of the
// driver has taints, counters or list attributes) and the length of a
// string attribute.
const (
	maxDevicesPerSlice = resourceapi.ResourceSliceMaxDevices
	maxStringAttribute = resourceapi.DeviceAttributeMaxValueLength
)

// Published names: the type attribute's values and the capacity.
const (
	deviceTypePF = "pf"
	deviceTypeVF = "vf"
	// CapacityBandwidth is a PF's consumable capacity: its link speed in
	// bits per second.
	CapacityBandwidth resourceapi.QualifiedName = "bandwidth"
)

// Bandwidth request policy: a share that asks for nothing gets
// defaultShareBandwidth (1 Gb/s, at most the link speed); requests are
// rounded up to a multiple of the policy's step, the largest of 1 Gb/s,
// 100 Mb/s and 1 Mb/s that divides the link speed at least twice.
const defaultShareBandwidth = 1_000_000_000

var bandwidthSteps = []int64{1_000_000_000, 100_000_000, 1_000_000}

// deviceKind tells the PF's share device from a VF.
type deviceKind int

const (
	kindPF deviceKind = iota
	kindVF
)

// device is one published device.
type device struct {
	Name string
	Kind deviceKind
	PF   *PF
	// VF is the VF's index, BDF its PCI address ("" when not known:
	// the VF does not exist and the PF has no VF layout).
	VF  int
	BDF string
	// Count is how many VFs the PF gets when prepare creates them (VFs
	// only): the number of VFs published for it.
	Count int
}

// pfDeviceName is nic-<domain>-<bus>-<device>-<function>: nic-0000-3b-00-0.
func pfDeviceName(bdf string) string {
	return "nic-" + strings.NewReplacer(":", "-", ".", "-").Replace(bdf)
}

// vfDeviceName is <PF device>-vf<i>.
func vfDeviceName(pfBDF string, i int) string { return fmt.Sprintf("%s-vf%d", pfDeviceName(pfBDF), i) }

// publishedVFs is how many VFs of pf are published: as many as exist when
// the PF has VFs (at most perPF), else perPF up to sriov_totalvfs.
func publishedVFs(pf *PF, perPF int) int {
	if pf.NumVFs > 0 {
		return min(pf.NumVFs, perPF)
	}
	return min(pf.TotalVFs, perPF)
}

// expectVFNetdev reports whether VFs the driver creates get a netdev: the
// kernel binds new VFs to the PF's driver when autoprobe is on.
func expectVFNetdev(pf *PF) bool { return pf.AutoProbe && pf.HasDriver && pf.Netdev != nil }

// expectVFRDMA reports whether VFs the driver creates get an RDMA device.
func expectVFRDMA(pf *PF) bool { return expectVFNetdev(pf) && pf.RDMA != nil }

// inventory turns the PFs into the devices to publish, in order: per PF
// its share device (when its link speed is known), then its VFs.
func inventory(ctx context.Context, pfs []PF, perPF int) []device {
	logger := klog.FromContext(ctx)
	var devs []device
	for i := range pfs {
		pf := &pfs[i]
		if pf.Netdev != nil && pf.Netdev.SpeedMbps > 0 {
			devs = append(devs, device{Name: pfDeviceName(pf.BDF), Kind: kindPF, PF: pf, VF: -1, BDF: pf.BDF})
		} else {
			logger.Info("Publishing no bandwidth shares of a PF without a network interface or known link speed", "pf", pf.BDF)
		}
		count := publishedVFs(pf, perPF)
		for vf := range count {
			bdf, _ := vfBDF(*pf, vf)
			for _, existing := range pf.VFs {
				if existing.Index == vf {
					bdf = existing.BDF
				}
			}
			devs = append(devs, device{Name: vfDeviceName(pf.BDF, vf), Kind: kindVF, PF: pf, VF: vf, BDF: bdf, Count: count})
		}
	}
	return devs
}

// buildResources publishes devs as one pool named poolName, in slices of
// at most 128 devices; a pool without devices gets one empty slice ("no
// devices" differs from "no pool").
func buildResources(poolName string, devs []device) (resourceslice.DriverResources, error) {
	pool := resourceslice.Pool{}
	var slice resourceslice.Slice
	for i := range devs {
		dev, err := apiDevice(&devs[i])
		if err != nil {
			return resourceslice.DriverResources{}, err
		}
		if len(slice.Devices) == maxDevicesPerSlice {
			pool.Slices = append(pool.Slices, slice)
			slice = resourceslice.Slice{}
		}
		slice.Devices = append(slice.Devices, dev)
	}
	if len(slice.Devices) > 0 || len(pool.Slices) == 0 {
		pool.Slices = append(pool.Slices, slice)
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{poolName: pool}}, nil
}

type attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute

func (a attrs) str(name resourceapi.QualifiedName, v string) {
	if v != "" {
		a[name] = resourceapi.DeviceAttribute{StringValue: ptr.To(truncate(v))}
	}
}

func (a attrs) int(name resourceapi.QualifiedName, v int64) {
	a[name] = resourceapi.DeviceAttribute{IntValue: ptr.To(v)}
}

func (a attrs) bool(name resourceapi.QualifiedName, v bool) {
	a[name] = resourceapi.DeviceAttribute{BoolValue: ptr.To(v)}
}

// standard sets the resource.kubernetes.io attributes: pciBusID (through
// deviceattribute's format check), the PF's pcieRoot and numaNode.
func (a attrs) standard(bdf string, pf *PF) error {
	if bdf != "" {
		attr, err := deviceattribute.GetPCIBusIDAttribute(bdf)
		if err != nil {
			return err
		}
		a[attr.Name] = attr.Value
	}
	a.str(deviceattribute.StandardDeviceAttributePCIeRoot, pf.PCIeRoot)
	if pf.NUMANode >= 0 {
		a.int(deviceattribute.StandardDeviceAttributeNUMANode, int64(pf.NUMANode))
	}
	return nil
}

// apiDevice builds a device's attributes and capacity.
func apiDevice(d *device) (resourceapi.Device, error) {
	pf := d.PF
	a := attrs{}
	if err := a.standard(d.BDF, pf); err != nil {
		return resourceapi.Device{}, fmt.Errorf("device %s: %w", d.Name, err)
	}
	a.str("vendorID", pf.VendorID)
	dev := resourceapi.Device{Name: d.Name, Attributes: a}
	switch d.Kind {
	case kindPF:
		n := pf.Netdev
		a.str("type", deviceTypePF)
		a.str("deviceID", pf.DeviceID)
		a.str("interfaceName", n.Name)
		a.str("macAddress", n.Address)
		if n.MTU > 0 {
			a.int("mtu", int64(n.MTU))
		}
		a.int("linkSpeed", n.SpeedMbps)
		a.bool("rdma", pf.RDMA != nil)
		if pf.RDMA != nil {
			a.str("rdmaDevice", pf.RDMA.Device)
		}
		a.int("totalVFs", int64(pf.TotalVFs))
		bandwidth := n.SpeedMbps * 1_000_000
		dev.AllowMultipleAllocations = ptr.To(true)
		dev.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			CapacityBandwidth: {Value: *resource.NewQuantity(bandwidth, resource.DecimalSI), RequestPolicy: bandwidthPolicy(bandwidth)},
		}
	case kindVF:
		a.str("type", deviceTypeVF)
		a.str("deviceID", pf.VFDeviceID)
		a.int("vfIndex", int64(d.VF))
		a.str("pfDevice", pfDeviceName(pf.BDF))
		a.str("pfPCIBusID", pf.BDF)
		if pf.Netdev != nil {
			a.str("pfInterfaceName", pf.Netdev.Name)
		}
		rdma := expectVFRDMA(pf)
		for _, vf := range pf.VFs {
			if vf.Index == d.VF {
				rdma = vf.RDMA != nil
			}
		}
		a.bool("rdma", rdma)
	}
	return dev, nil
}

// bandwidthPolicy is the request policy of a link of bandwidth bits per
// second: validRange from one step to the whole link in steps, default
// 1 Gb/s (at most the link, a multiple of the step). A link too slow for
// two steps of 1 Mb/s gets none (every share takes the whole link).
func bandwidthPolicy(bandwidth int64) *resourceapi.CapacityRequestPolicy {
	var step int64
	for _, s := range bandwidthSteps {
		if bandwidth%s == 0 && bandwidth >= 2*s {
			step = s
			break
		}
	}
	if step == 0 {
		return nil
	}
	def := min(int64(defaultShareBandwidth), bandwidth) / step * step
	q := func(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.DecimalSI) }
	return &resourceapi.CapacityRequestPolicy{
		Default:    q(def),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q(step), Max: q(bandwidth), Step: q(step)},
	}
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
