package observe

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"drakit.dev/drakit/conformance/probe"
	"drakit.dev/drakit/internal/nvidiahw"
)

// PartitionNames are the attribute and capacity names a driver publishes
// GPU partitions (MIG devices of KEP-4815) with, bare or domain/name as
// LookupAttribute takes them.
type PartitionNames struct {
	// Driver is the driver's name, the domain of bare names.
	Driver string
	// UUID is a device's own UUID attribute: a whole GPU's, or a
	// pre-created MIG device's.
	UUID string
	// Profile is a partition's profile attribute ("1g.5gb").
	Profile string
	// ParentUUID is a partition's attribute with the UUID of its GPU.
	ParentUUID string
	// Memory is the capacity with a device's memory.
	Memory string
}

// Partition is what a device's attributes say about it as a partition.
type Partition struct {
	Profile    string
	ParentUUID string
	// UUID is the MIG device's own UUID when the driver publishes one (a
	// pre-created MIG device has it, a partition created on prepare cannot).
	UUID string
}

// Partition reads a device's profile, parent UUID and own UUID from its
// attributes; false when it lacks the profile or the parent UUID as a
// string attribute, that is, when it is no partition.
func (n PartitionNames) Partition(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) (Partition, bool) {
	prof, ok1 := LookupAttribute(attrs, n.Driver, n.Profile)
	parent, ok2 := LookupAttribute(attrs, n.Driver, n.ParentUUID)
	if !ok1 || !ok2 || prof.StringValue == nil || parent.StringValue == nil {
		return Partition{}, false
	}
	p := Partition{Profile: *prof.StringValue, ParentUUID: *parent.StringValue}
	if u, ok := LookupAttribute(attrs, n.Driver, n.UUID); ok && u.StringValue != nil {
		p.UUID = *u.StringValue
	}
	return p, true
}

// MemoryOf is a device's memory capacity; false when it has none.
func (n PartitionNames) MemoryOf(capacity map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) (resource.Quantity, bool) {
	c, ok := LookupCapacity(capacity, n.Driver, n.Memory)
	return c.Value, ok
}

// allocatedPartition is an allocated device that is a partition.
type allocatedPartition struct {
	Partition
	dev Device
}

// CheckMIGNVML compares what NVML shows in the container with the devices
// allocated to the pod's claims: whole GPUs (with a UUID attribute) must be
// listed with no MIG devices; every GPU that is the parent of allocated
// partitions must be listed with exactly as many MIG devices, of the
// allocated profiles (NVML names a MIG device "<GPU name> MIG <profile>")
// and memory sizes; no other GPU may be visible. Findings: NVML failed; an
// allocated device is neither a partition nor has a UUID; a whole GPU is
// not listed or shows MIG devices; a parent GPU is not listed, shows
// another number of MIG devices, or no MIG device that matches an allocated
// partition; NVML lists a GPU that is neither allocated nor a parent, as in
//
//	pod p: GPU GPU-5 is allocated whole, but NVML also shows 1 MIG devices on it
func CheckMIGNVML(pod string, names PartitionNames, allocated []Device, r probe.Report) []string {
	if r.NVML.Unavailable != "" {
		return nil
	}
	out, seen := nvmlGPUs(pod, r)
	whole := map[string]bool{}
	wantParts := map[string][]allocatedPartition{} // parent UUID -> partitions
	for _, d := range allocated {
		if p, ok := names.Partition(d.Attributes); ok {
			wantParts[p.ParentUUID] = append(wantParts[p.ParentUUID], allocatedPartition{Partition: p, dev: d})
			continue
		}
		if d.UUID == "" {
			out = append(out, fmt.Sprintf("pod %s: allocated device %s (claim %s) has neither a %q and %q attribute nor a %q attribute, so the kit cannot identify it",
				pod, d.ID(), d.Claim, names.Profile, names.ParentUUID, names.UUID))
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
func matchMIGDevices(pod string, names PartitionNames, g probe.GPU, parts []allocatedPartition) []string {
	var out []string
	if len(g.MIGDevices) != len(parts) {
		out = append(out, fmt.Sprintf("pod %s: GPU %s: NVML shows %d MIG devices (%s), %d partitions are allocated (%s)",
			pod, g.UUID, len(g.MIGDevices), migList(g.MIGDevices), len(parts), partitionIDs(parts)))
	}
	used := make([]bool, len(g.MIGDevices))
	for _, p := range parts {
		want := g.Name + " MIG " + p.Profile
		mem, hasMem := names.MemoryOf(p.dev.Capacity)
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
				pod, p.dev.ID(), p.Profile, memText, want, g.UUID, migList(g.MIGDevices)))
		}
	}
	return out
}

// capsDir is where NVIDIA capability device nodes live in a container.
const capsDir = probe.DevPath + "/nvidia-caps"

// CheckMIGDeviceNodes checks the container's NVIDIA device nodes against the
// GPUs and MIG devices NVML shows in it: /dev/nvidia<minor> (195:<minor>) for
// every GPU, /dev/nvidia-caps/nvidia-cap<m> with minor m for the GPU
// instance and the compute instance of every MIG device (m by the NVIDIA
// driver's numbering of /proc/driver/nvidia-caps/mig-minors), and nothing
// else: no other GPU node and no other capability, the MIG config and
// monitor capabilities included. Findings: NVML shows no GPU; a GPU or
// capability node is missing, or a capability node is no character device
// of its minor; a GPU node of a GPU NVML does not show; a capability node
// of no MIG device NVML shows, as in
//
//	pod p: capability node /dev/nvidia-caps/nvidia-cap1 is not the capability of any MIG device NVML shows in the container
func CheckMIGDeviceNodes(pod string, r probe.Report) []string {
	if r.NVML.Unavailable != "" {
		return nil
	}
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
				{fmt.Sprintf("GPU instance %d", m.GPUInstance), nvidiahw.GIAccessMinor(g.Minor, m.GPUInstance)},
				{fmt.Sprintf("compute instance %d/%d", m.GPUInstance, m.ComputeInstance), nvidiahw.CIAccessMinor(g.Minor, m.GPUInstance, m.ComputeInstance)},
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

func partitionIDs(parts []allocatedPartition) string {
	ids := make([]string, len(parts))
	for i, p := range parts {
		ids[i] = p.dev.ID() + " (" + p.Profile + ")"
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
