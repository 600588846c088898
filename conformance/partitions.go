package conformance

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// partition is a published GPU partition (a MIG device of KEP-4815): a
// device of the partition class with a profile and a parent GPU.
type partition struct {
	publishedDevice
	Profile    string
	ParentUUID string
	// UUID is the MIG device's own UUID when the driver publishes one (a
	// pre-created MIG device has it, a partition created on prepare cannot).
	UUID string
}

// partitionNames are the attribute and capacity names the kit reads
// partitions with (Config's PartitionClassName, ProfileAttribute, …).
type partitionNames struct {
	driver, uuid, profile, parentUUID, memory string
}

func (c Config) partitionNames() partitionNames {
	return partitionNames{driver: c.DriverName, uuid: c.UUIDAttribute, profile: c.ProfileAttribute,
		parentUUID: c.ParentUUIDAttribute, memory: c.MemoryCapacity}
}

// asPartition reads a device's profile and parent UUID; false when it lacks
// either string attribute.
func (n partitionNames) asPartition(d publishedDevice) (partition, bool) {
	prof, ok1 := observe.LookupAttribute(d.Attributes, n.driver, n.profile)
	parent, ok2 := observe.LookupAttribute(d.Attributes, n.driver, n.parentUUID)
	if !ok1 || !ok2 || prof.StringValue == nil || parent.StringValue == nil {
		return partition{}, false
	}
	p := partition{publishedDevice: d, Profile: *prof.StringValue, ParentUUID: *parent.StringValue}
	if u, ok := observe.LookupAttribute(d.Attributes, n.driver, n.uuid); ok && u.StringValue != nil {
		p.UUID = *u.StringValue
	}
	return p, true
}

// partitionsWithPrefix returns the counter-consuming partitions among
// devices whose profile starts with prefix, sorted by parent UUID, then
// device ID.
func (n partitionNames) partitionsWithPrefix(devices []publishedDevice, prefix string) []partition {
	var out []partition
	for _, d := range devices {
		p, ok := n.asPartition(d)
		if ok && len(d.Consumes) > 0 && strings.HasPrefix(p.Profile, prefix) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ParentUUID != out[j].ParentUUID {
			return out[i].ParentUUID < out[j].ParentUUID
		}
		return out[i].ID() < out[j].ID()
	})
	return out
}

// parents lists the distinct parent UUIDs of partitions, in order.
func parents(parts []partition) []string {
	var out []string
	for _, p := range parts {
		if len(out) == 0 || out[len(out)-1] != p.ParentUUID {
			out = append(out, p.ParentUUID)
		}
	}
	return out
}

// memoryOf is a device's memory capacity; false when it has none.
func (n partitionNames) memoryOf(capacity map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) (resource.Quantity, bool) {
	c, ok := observe.LookupCapacity(capacity, n.driver, n.memory)
	return c.Value, ok
}

// attributeExpr is the CEL operand of a string attribute, with optional
// chaining so that devices without it evaluate to "" instead of failing.
func attributeExpr(driver, attr string) string {
	domain, name := observe.SplitAttribute(driver, attr)
	return fmt.Sprintf(`device.attributes[%s].?%s.orValue("")`, strconv.Quote(domain), name)
}

// profilePrefixSelector matches the driver's devices whose profile starts
// with prefix.
func (n partitionNames) profilePrefixSelector(prefix string) string {
	return fmt.Sprintf(`device.driver == %s && %s.startsWith(%s)`, strconv.Quote(n.driver), attributeExpr(n.driver, n.profile), strconv.Quote(prefix))
}

// parentSelector matches the partitions of the GPU with UUID parent.
func (n partitionNames) parentSelector(parent string) string {
	return fmt.Sprintf(`%s == %s`, attributeExpr(n.driver, n.parentUUID), strconv.Quote(parent))
}

// memorySelector matches devices with at least q of memory capacity.
func (n partitionNames) memorySelector(q resource.Quantity) string {
	domain, name := observe.SplitAttribute(n.driver, n.memory)
	return fmt.Sprintf(`device.capacity[%s].?%s.orValue(quantity("0")).compareTo(quantity(%s)) >= 0`,
		strconv.Quote(domain), name, strconv.Quote(q.String()))
}

// checkMIGNVML compares what NVML shows in the container with the devices
// allocated to the pod's claims: whole GPUs (with a UUID attribute) must be
// listed with no MIG devices; every GPU that is the parent of allocated
// partitions must be listed with exactly as many MIG devices, of the
// allocated profiles (NVML names a MIG device "<GPU name> MIG <profile>")
// and memory sizes; no other GPU may be visible.
func checkMIGNVML(pod string, names partitionNames, allocated []observe.Device, r probe.Report) []string {
	var out []string
	if r.NVML.Error != "" {
		out = append(out, fmt.Sprintf("pod %s: NVML in the container failed: %s", pod, r.NVML.Error))
	}
	seen := map[string]probe.GPU{}
	for _, g := range r.NVML.GPUs {
		seen[g.UUID] = g
	}
	whole := map[string]bool{}
	wantParts := map[string][]partition{} // parent UUID -> partitions
	for _, d := range allocated {
		pd := publishedDevice{Pool: d.Pool, Name: d.Device, Attributes: d.Attributes, Capacity: d.Capacity}
		if p, ok := names.asPartition(pd); ok {
			wantParts[p.ParentUUID] = append(wantParts[p.ParentUUID], p)
			continue
		}
		if d.UUID == "" {
			out = append(out, fmt.Sprintf("pod %s: allocated device %s (claim %s) has neither a %q and %q attribute nor a %q attribute, so the kit cannot identify it",
				pod, d.ID(), d.Claim, names.profile, names.parentUUID, names.uuid))
			continue
		}
		whole[d.UUID] = true
	}
	for uuid := range whole {
		g, ok := seen[uuid]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("pod %s: allocated GPU %s is not visible through NVML in the container (NVML lists %s)", pod, uuid, gpuList(r.NVML.GPUs)))
		case len(g.MIGDevices) > 0:
			out = append(out, fmt.Sprintf("pod %s: GPU %s is allocated whole, but NVML also shows %d MIG devices on it", pod, uuid, len(g.MIGDevices)))
		}
	}
	for _, parent := range slices.Sorted(maps.Keys(wantParts)) {
		parts := wantParts[parent]
		g, ok := seen[parent]
		if !ok {
			out = append(out, fmt.Sprintf("pod %s: GPU %s, the parent of allocated partitions %s, is not visible through NVML in the container (NVML lists %s)",
				pod, parent, partitionIDs(parts), gpuList(r.NVML.GPUs)))
			continue
		}
		out = append(out, matchMIGDevices(pod, names, g, parts)...)
	}
	for _, g := range r.NVML.GPUs {
		if !whole[g.UUID] && wantParts[g.UUID] == nil {
			out = append(out, fmt.Sprintf("pod %s: NVML in the container lists GPU %s (minor %d, %d MIG devices), which is neither allocated to the pod's claims nor the parent of an allocated partition",
				pod, g.UUID, g.Minor, len(g.MIGDevices)))
		}
	}
	return out
}

// matchMIGDevices pairs a GPU's MIG devices with the allocated partitions of
// that GPU by profile, memory and, where the partition publishes one, UUID;
// every one of both must find a partner.
func matchMIGDevices(pod string, names partitionNames, g probe.GPU, parts []partition) []string {
	var out []string
	if len(g.MIGDevices) != len(parts) {
		out = append(out, fmt.Sprintf("pod %s: GPU %s: NVML shows %d MIG devices (%s), %d partitions are allocated (%s)",
			pod, g.UUID, len(g.MIGDevices), migList(g.MIGDevices), len(parts), partitionIDs(parts)))
	}
	used := make([]bool, len(g.MIGDevices))
	for _, p := range parts {
		want := g.Name + " MIG " + p.Profile
		mem, hasMem := names.memoryOf(p.Capacity)
		found := false
		for i, m := range g.MIGDevices {
			if used[i] || m.Name != want {
				continue
			}
			if (hasMem && m.MemoryTotal != uint64(mem.Value())) || (p.UUID != "" && m.UUID != p.UUID) {
				continue
			}
			used[i], found = true, true
			break
		}
		if !found {
			memText := "any memory size"
			if hasMem {
				memText = fmt.Sprintf("%d bytes of memory", mem.Value())
			}
			if p.UUID != "" {
				memText += ", uuid " + p.UUID
			}
			out = append(out, fmt.Sprintf("pod %s: allocated partition %s (profile %s, %s) has no MIG device %q with that memory on GPU %s through NVML (NVML shows %s)",
				pod, p.ID(), p.Profile, memText, want, g.UUID, migList(g.MIGDevices)))
		}
	}
	return out
}

// checkMIGDeviceNodes checks the container's NVIDIA device nodes against the
// GPUs and MIG devices NVML shows in it: /dev/nvidia<minor> (195:<minor>) for
// every GPU, /dev/nvidia-caps/nvidia-cap<m> with minor m for the GPU
// instance and the compute instance of every MIG device (m by the NVIDIA
// driver's numbering of /proc/driver/nvidia-caps/mig-minors), and nothing
// else: no other GPU node and no other capability, the MIG config and
// monitor capabilities included.
func checkMIGDeviceNodes(pod string, r probe.Report) []string {
	var out []string
	if len(r.NVML.GPUs) == 0 {
		return []string{fmt.Sprintf("pod %s: NVML shows no GPU in the container, so there are no device nodes to check", pod)}
	}
	gpuNodes := map[uint32]probe.DeviceNode{}
	capNodes := map[string]probe.DeviceNode{}
	for _, d := range r.Devices {
		switch {
		case isGPUNode(d):
			gpuNodes[d.Minor] = d
		case strings.HasPrefix(d.Path, capsDir+"/"):
			capNodes[d.Path] = d
		}
	}
	wantGPU := map[uint32]bool{}
	wantCaps := map[string]bool{}
	for _, g := range r.NVML.GPUs {
		minor := uint32(g.Minor)
		wantGPU[minor] = true
		if _, ok := gpuNodes[minor]; !ok {
			out = append(out, fmt.Sprintf("pod %s: no device node %s/nvidia%d (%d:%d) for GPU %s", pod, probe.DevPath, minor, nvidiaMajor, minor, g.UUID))
		}
		for _, m := range g.MIGDevices {
			for _, c := range []struct {
				what  string
				minor int
			}{
				{fmt.Sprintf("GPU instance %d", m.GPUInstance), nvmlstate.GIAccessMinor(g.Minor, m.GPUInstance)},
				{fmt.Sprintf("compute instance %d/%d", m.GPUInstance, m.ComputeInstance), nvmlstate.CIAccessMinor(g.Minor, m.GPUInstance, m.ComputeInstance)},
			} {
				path := fmt.Sprintf("%s/nvidia-cap%d", capsDir, c.minor)
				wantCaps[path] = true
				n, ok := capNodes[path]
				switch {
				case !ok:
					out = append(out, fmt.Sprintf("pod %s: no capability node %s for the %s of MIG device %s on GPU %s", pod, path, c.what, m.UUID, g.UUID))
				case n.Type != probe.CharDevice || n.Minor != uint32(c.minor):
					out = append(out, fmt.Sprintf("pod %s: capability node %s is %s %d:%d, expected a character device with minor %d", pod, path, n.Type, n.Major, n.Minor, c.minor))
				}
			}
		}
	}
	for _, m := range slices.Sorted(maps.Keys(gpuNodes)) {
		if !wantGPU[m] {
			n := gpuNodes[m]
			out = append(out, fmt.Sprintf("pod %s: device node %s (%d:%d) gives access to a GPU NVML does not show", pod, n.Path, n.Major, n.Minor))
		}
	}
	for _, path := range slices.Sorted(maps.Keys(capNodes)) {
		if !wantCaps[path] {
			out = append(out, fmt.Sprintf("pod %s: capability node %s is not the capability of any MIG device NVML shows in the container", pod, path))
		}
	}
	return out
}

// capsDir is where NVIDIA capability device nodes live in a container.
const capsDir = probe.DevPath + "/nvidia-caps"

// checkCounters sums what the devices consume per counter set and compares
// it with the counter sets: a scheduler that respects KEP-4815 never
// allocates more than a set holds.
func checkCounters(devices []publishedDevice, sets map[string]map[string]resourceapi.CounterSet) []string {
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

func partitionIDs(parts []partition) string {
	ids := make([]string, len(parts))
	for i, p := range parts {
		ids[i] = p.ID() + " (" + p.Profile + ")"
	}
	return strings.Join(ids, ", ")
}

func migList(migs []probe.MIGDevice) string {
	if len(migs) == 0 {
		return "none"
	}
	s := make([]string, len(migs))
	for i, m := range migs {
		s[i] = fmt.Sprintf("%s %q gi %d ci %d %d bytes", m.UUID, m.Name, m.GPUInstance, m.ComputeInstance, m.MemoryTotal)
	}
	return strings.Join(s, "; ")
}
