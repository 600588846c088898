package kit

import (
	"fmt"
	"sort"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/report"
)

// partition is a published partition (a MIG device of KEP-4815): a device
// of the partition class with a profile and a parent device.
type partition struct {
	PublishedDevice
	observe.Partition
}

// partitionNames are the attribute and capacity names the kit reads
// partitions with (Config's PartitionClassName, ProfileAttribute, …), with
// the kit's lookups and selectors over published devices.
type partitionNames struct {
	observe.PartitionNames
}

func (c DriverSettings) PartitionNames() partitionNames {
	return partitionNames{observe.PartitionNames{Driver: c.DriverName, UUID: c.UUIDAttribute, Profile: c.ProfileAttribute,
		ParentUUID: c.ParentUUIDAttribute, Memory: c.MemoryCapacity}}
}

// asPartition reads a device's profile and parent UUID; false when it lacks
// either string attribute.
func (n partitionNames) AsPartition(d PublishedDevice) (partition, bool) {
	p, ok := n.Partition(d.Attributes)
	if !ok {
		return partition{}, false
	}
	return partition{PublishedDevice: d, Partition: p}, true
}

// attributeExpr is the CEL operand of a string attribute, with optional
// chaining so that devices without it evaluate to "" instead of failing.
func attributeExpr(driver, attr string) string {
	domain, name := observe.SplitAttribute(driver, attr)
	return fmt.Sprintf(`device.attributes[%s].?%s.orValue("")`, strconv.Quote(domain), name)
}

// unitSelector matches the partitions of profile whose parent has the
// identity parent.
func (n partitionNames) UnitSelector(parent, profile string) string {
	return fmt.Sprintf(`%s == %s && %s == %s`, attributeExpr(n.Driver, n.ParentUUID), strconv.Quote(parent),
		attributeExpr(n.Driver, n.Profile), strconv.Quote(profile))
}

// parentSelector matches the partitions of the device with identity parent.
func (n partitionNames) parentSelector(parent string) string {
	return fmt.Sprintf(`%s == %s`, attributeExpr(n.Driver, n.ParentUUID), strconv.Quote(parent))
}

// memorySelector matches devices with at least q of memory capacity.
func (n partitionNames) MemorySelector(q resource.Quantity) string {
	domain, name := observe.SplitAttribute(n.Driver, n.Memory)
	return fmt.Sprintf(`device.capacity[%s].?%s.orValue(quantity("0")).compareTo(quantity(%s)) >= 0`,
		strconv.Quote(domain), name, strconv.Quote(q.String()))
}

// checkCounters sums what the devices consume per counter set and compares
// it with the counter sets: a scheduler that respects KEP-4815 never
// allocates more than a set holds.
func CheckCounters(devices []PublishedDevice, sets map[string]map[string]resourceapi.CounterSet) []string {
	type key struct{ pool, set, counter string }
	used := map[key]resource.Quantity{}
	var out []string
	for _, d := range devices {
		for _, c := range d.Consumes {
			if _, ok := sets[d.Pool][c.CounterSet]; !ok {
				out = append(out, fmt.Sprintf("device %s consumes counter set %s, which no slice of pool %s declares", d.ID(), c.CounterSet, d.Pool))
				continue
			}
			for name, v := range c.Counters {
				k := key{d.Pool, c.CounterSet, name}
				q := used[k]
				q.Add(v.Value)
				used[k] = q
			}
		}
	}
	keys := make([]key, 0, len(used))
	for k := range used {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	for _, k := range keys {
		total, ok := sets[k.pool][k.set].Counters[k.counter]
		q := used[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("counter %s is consumed but not in counter set %s of pool %s", k.counter, k.set, k.pool))
		case q.Cmp(total.Value) > 0:
			out = append(out, fmt.Sprintf("counter set %s of pool %s: the allocated devices consume %s of counter %s, the set holds %s",
				k.set, k.pool, q.String(), k.counter, total.Value.String()))
		}
	}
	return out
}

// partitionSkipReason explains why partition scenarios do not apply.
const PartitionSkipReason = report.NotDeclaredPrefix + "the driver declares no partition DeviceClass (deviceKinds[].partitions of its declaration, or --partition-class)"
