package plaindriver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/reference/pluginharness"
)

// Published names.
const (
	attributeIndex  = "index"
	attributeSerial = "serial"
	// attributeKind is whole, partition or shared in the styles that
	// publish more than one kind (partitions, consumable-capacity): each
	// kind's DeviceClass selects by it.
	attributeKind = "kind"
	// attributeProfile and attributeParentSerial are a partition's profile
	// (half, quarter) and the serial of the device it is part of.
	attributeProfile      = "profile"
	attributeParentSerial = "parentSerial"
	// attributeNUMANode is the standard attribute DefectAttributeType
	// publishes with the wrong type.
	attributeNUMANode = "resource.kubernetes.io/numaNode"
	capacitySize      = "size"
	// capacityBandwidth is a shared device's capacity, consumed by shares.
	capacityBandwidth = "bandwidth"
	// counterSlots is the counter of a partitionable device's counter set,
	// which holds deviceSlots.
	counterSlots = "slots"
	// deviceSize is every device's size capacity in bytes (1Gi).
	deviceSize = 1 << 30
	// sharedBandwidth is a shared device's bandwidth (8Gi), given out in
	// shares of shareStep, shareStep by default.
	sharedBandwidth = 8 << 30
	shareStep       = 1 << 30
	// serialFile is the file in a device's directory that holds its serial.
	serialFile = "serial"
)

// The device kinds.
const (
	kindWhole     = "whole"
	kindPartition = "partition"
	kindShared    = "shared"
)

// The partitions of a partitionable device: halves of 2 slots and quarters
// of 1, of deviceSlots.
const (
	deviceSlots = 4
	halves      = 2
	quarters    = 4
)

// device is one device of the node.
type device struct {
	Name   string
	Index  int
	Serial string
	// Kind is kindWhole, kindPartition or kindShared.
	Kind string
	// Parent is a partition's device, Profile its profile and Slots how
	// many of the parent's counter slots it consumes.
	Parent  *device
	Profile string
	Slots   int
}

// deviceName is the name of the device with index i: dev-<i>.
func deviceName(i int) string { return fmt.Sprintf("dev-%d", i) }

// deviceSerial is the serial of the device with index i on node:
// PLN-<first 8 hex digits of the SHA-256 of the node name>-<i>, stable
// across restarts and different on every node.
func deviceSerial(node string, i int) string {
	sum := sha256.Sum256([]byte(node))
	return fmt.Sprintf("PLN-%s-%d", hex.EncodeToString(sum[:4]), i)
}

// nodeDevices returns the node's devices for style s: n whole devices
// dev-0 to dev-<n-1>, then with StylePartitions each one's halves
// dev-<i>-half-<j> and quarters dev-<i>-quarter-<j>, with
// StyleConsumableCapacity the shared devices shared-<j>. Indices count on
// after the whole devices', in that order.
func nodeDevices(node string, n int, s Style) []device {
	devs := make([]device, n)
	for i := range devs {
		devs[i] = device{Name: deviceName(i), Index: i, Serial: deviceSerial(node, i), Kind: kindWhole, Slots: deviceSlots}
	}
	next := n
	add := func(d device) {
		d.Index, d.Serial = next, deviceSerial(node, next)
		devs = append(devs, d)
		next++
	}
	switch s.effective() {
	case StylePartitions:
		for i := range n {
			parent := &devs[i]
			for _, p := range []struct {
				profile string
				count   int
			}{{"half", halves}, {"quarter", quarters}} {
				for j := range p.count {
					add(device{Name: fmt.Sprintf("%s-%s-%d", parent.Name, p.profile, j), Kind: kindPartition,
						Parent: &device{Name: parent.Name, Serial: parent.Serial}, Profile: p.profile, Slots: deviceSlots / p.count})
				}
			}
		}
	case StyleConsumableCapacity:
		for j := range sharedDevices {
			add(device{Name: fmt.Sprintf("shared-%d", j), Kind: kindShared})
		}
	}
	return devs
}

// counterSet is the name of a partitionable device's counter set.
func counterSet(d device) string { return d.Name + "-counters" }

// buildResources is the node's pool for style s: one slice with every
// device, and with StylePartitions a first slice with the counter sets
// (a slice holds either). With DefectDuplicateDeviceNames the devices'
// slice carries one more device, with the next index and its serial but
// named like the first device; the other slice defects change what their
// devices publish (see the package documentation).
func buildResources(pool, node string, devs []device, s Style, defect Defect) resourceslice.DriverResources {
	published := make([]resourceapi.Device, 0, len(devs)+1)
	var sets []resourceapi.CounterSet
	for _, d := range devs {
		sd := sliceDevice(d, s, defect)
		if d.Index == 1 && defect == DefectDuplicateIdentity {
			sd.Attributes[attributeSerial] = resourceapi.DeviceAttribute{StringValue: ptr.To(devs[0].Serial)}
		}
		published = append(published, sd)
		if s.effective() == StylePartitions && d.Kind == kindWhole {
			sets = append(sets, resourceapi.CounterSet{Name: counterSet(d), Counters: map[string]resourceapi.Counter{
				counterSlots: {Value: *resource.NewQuantity(deviceSlots, resource.DecimalSI)},
			}})
		}
	}
	if defect == DefectDuplicateDeviceNames {
		n := len(devs)
		published = append(published, sliceDevice(device{Name: devs[0].Name, Index: n, Serial: deviceSerial(node, n), Kind: kindWhole}, s, defect))
	}
	var slices []resourceslice.Slice
	if len(sets) > 0 {
		slices = append(slices, resourceslice.Slice{SharedCounters: sets})
	}
	slices = append(slices, resourceslice.Slice{Devices: published})
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{pool: {Slices: slices}}}
}

// sliceDevice is what the slice says about d in style s.
func sliceDevice(d device, s Style, defect Defect) resourceapi.Device {
	out := resourceapi.Device{
		Name: d.Name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			attributeIndex:  {IntValue: ptr.To(int64(d.Index))},
			attributeSerial: {StringValue: ptr.To(d.Serial)},
		},
	}
	if defect == DefectAttributeType {
		out.Attributes[attributeNUMANode] = resourceapi.DeviceAttribute{StringValue: ptr.To("0")}
	}
	switch st := s.effective(); {
	case d.Kind == kindShared:
		out.AllowMultipleAllocations = ptr.To(true)
		out.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			capacityBandwidth: {
				Value: *resource.NewQuantity(sharedBandwidth, resource.BinarySI),
				RequestPolicy: &resourceapi.CapacityRequestPolicy{
					Default: resource.NewQuantity(shareStep, resource.BinarySI),
					ValidRange: &resourceapi.CapacityRequestPolicyRange{
						Min:  resource.NewQuantity(shareStep, resource.BinarySI),
						Step: resource.NewQuantity(shareStep, resource.BinarySI),
					},
				},
			},
		}
	case st == StylePartitions:
		out.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			capacitySize: {Value: *resource.NewQuantity(int64(deviceSize/deviceSlots*d.Slots), resource.BinarySI)},
		}
		set, slots := counterSet(d), d.Slots
		if d.Parent != nil {
			set = counterSet(*d.Parent)
			out.Attributes[attributeProfile] = resourceapi.DeviceAttribute{StringValue: ptr.To(d.Profile)}
			out.Attributes[attributeParentSerial] = resourceapi.DeviceAttribute{StringValue: ptr.To(d.Parent.Serial)}
			if defect == DefectCountersOvercommitted && d.Name == d.Parent.Name+"-quarter-"+strconv.Itoa(quarters-1) {
				slots = deviceSlots + 1
			}
		} else if defect == DefectCountersUnderconsumed {
			slots = deviceSlots / 2
		}
		out.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: map[string]resourceapi.Counter{
			counterSlots: {Value: *resource.NewQuantity(int64(slots), resource.DecimalSI)},
		}}}
	default:
		out.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			capacitySize: {Value: *resource.NewQuantity(deviceSize, resource.BinarySI)},
		}
	}
	if s.effective() == StylePartitions || s.effective() == StyleConsumableCapacity {
		out.Attributes[attributeKind] = resourceapi.DeviceAttribute{StringValue: ptr.To(d.Kind)}
	}
	return out
}

// deviceDir is the host directory of a device below the state directory;
// containers get it mounted read-only.
func deviceDir(stateDir, name string) string { return filepath.Join(stateDir, "devices", name) }

// writeDeviceDirs creates <stateDir>/devices/<device>/serial (mode 0644 in
// directories of mode 0755: containers of any user read it) holding the
// serial and a newline. A file with other content is replaced atomically
// (a temporary file renamed over it), so running containers, which have
// the directory mounted, see either content, never a partial one.
func writeDeviceDirs(stateDir string, devs []device) error {
	for _, d := range devs {
		dir := deviceDir(stateDir, d.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create device directory %s: %w", dir, err)
		}
		path := filepath.Join(dir, serialFile)
		want := []byte(d.Serial + "\n")
		switch got, err := os.ReadFile(path); {
		case err == nil && bytes.Equal(got, want):
			continue
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("read serial file %s: %w", path, err)
		}
		if err := pluginharness.WriteFileAtomic(path, want, 0o644); err != nil {
			return fmt.Errorf("write serial file %s: %w", path, err)
		}
	}
	return nil
}
