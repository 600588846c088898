package observe

import (
	"fmt"
	"sort"
	"strings"

	"drakit.dev/drakit/conformance/probe"
)

// NVIDIA GPU device nodes: character devices of major 195, /dev/nvidia<minor>
// for minors 0-253; 254 is nvidia-modeset and 255 nvidiactl.
const (
	nvidiaMajor       = 195
	nvidiaMaxGPUMinor = 253
)

// isGPUNode says whether a device node gives access to one GPU.
func isGPUNode(d probe.DeviceNode) bool {
	return d.Type == probe.CharDevice && d.Major == nvidiaMajor && d.Minor <= nvidiaMaxGPUMinor
}

// NVMLUnavailable says why NVML cannot judge the container: it could not
// be loaded or initialized there (no libnvidia-ml, a failed dlopen, a
// failed nvmlInit), which says nothing about the devices the container
// got; "" when NVML ran. The NVML checks (CheckNVML, CheckDeviceNodes,
// CheckMIGNVML, CheckMIGDeviceNodes) judge nothing then and return no
// findings, which the caller must not take for a pass.
func NVMLUnavailable(pod string, r probe.Report) string {
	if r.NVML.Unavailable == "" {
		return ""
	}
	return fmt.Sprintf("pod %s: NVML could not be loaded in the container (%s), so the kit cannot see its GPUs through NVML", pod, r.NVML.Unavailable)
}

// CheckNVML compares the GPUs NVML enumerates inside the container with the
// devices allocated to the pod's claims, identified by their UUID attribute
// (named uuidAttr in findings). Findings: a call of NVML failed in the
// container; an allocated device has no UUID; an allocated GPU is not listed; NVML lists
// a GPU that is not allocated, as in
//
//	pod p: NVML in the container lists GPU GPU-5 (minor 5, bus 0000:9a:00.0), which is not allocated to the pod's claims
func CheckNVML(pod, uuidAttr string, allocated []Device, r probe.Report) []string {
	if r.NVML.Unavailable != "" {
		return nil
	}
	out, seen := nvmlGPUs(pod, r)
	want := map[string]bool{}
	for _, d := range allocated {
		if d.UUID == "" {
			out = append(out, fmt.Sprintf("pod %s: allocated device %s (claim %s) has no %q attribute in its ResourceSlice, so the kit cannot identify it", pod, d.ID(), d.Claim, uuidAttr))
			continue
		}
		want[d.UUID] = true
		if _, ok := seen[d.UUID]; !ok {
			out = append(out, fmt.Sprintf("pod %s: allocated device %s (claim %s, uuid %s) is not visible through NVML in the container (NVML lists %s)", pod, d.ID(), d.Claim, d.UUID, gpuList(r.NVML.GPUs)))
		}
	}
	for _, g := range r.NVML.GPUs {
		if !want[g.UUID] {
			out = append(out, fmt.Sprintf("pod %s: NVML in the container lists GPU %s (minor %d, bus %s), which is not allocated to the pod's claims", pod, g.UUID, g.Minor, g.BusID))
		}
	}
	return out
}

// CheckDeviceNodes compares the container's GPU device nodes with the
// allocated GPUs. NVML inside the container maps each allocated UUID to its
// minor number; every allocated GPU needs /dev/nvidia<minor> with 195:<minor>
// and no other GPU node may be present. Findings: an allocated device
// without a UUID, or one NVML does not list (its node cannot be told); a
// missing node or one at another path; a GPU node of a GPU that is not
// allocated, as in
//
//	pod p: no device node 195:2 (/dev/nvidia2) for allocated device node/gpu-2 (uuid GPU-2)
func CheckDeviceNodes(pod string, allocated []Device, r probe.Report) []string {
	if r.NVML.Unavailable != "" {
		return nil
	}
	var out []string
	minorOf := map[string]int{}
	for _, g := range r.NVML.GPUs {
		minorOf[g.UUID] = g.Minor
	}
	nodes := map[uint32]probe.DeviceNode{}
	for _, d := range r.Devices {
		if isGPUNode(d) {
			nodes[d.Minor] = d
		}
	}
	expected := map[uint32]bool{}
	for _, d := range allocated {
		if d.UUID == "" {
			out = append(out, fmt.Sprintf("pod %s: allocated device %s (claim %s) has no UUID attribute, so the kit cannot tell which device node is its", pod, d.ID(), d.Claim))
			continue
		}
		m, ok := minorOf[d.UUID]
		if !ok {
			out = append(out, fmt.Sprintf("pod %s: cannot tell which device node belongs to allocated device %s (uuid %s): NVML in the container does not list it", pod, d.ID(), d.UUID))
			continue
		}
		minor := uint32(m)
		expected[minor] = true
		want := fmt.Sprintf("%s/nvidia%d", probe.DevPath, minor)
		n, ok := nodes[minor]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("pod %s: no device node %d:%d (%s) for allocated device %s (uuid %s)", pod, nvidiaMajor, minor, want, d.ID(), d.UUID))
		case n.Path != want:
			out = append(out, fmt.Sprintf("pod %s: device node %d:%d of allocated device %s is at %s, expected %s", pod, nvidiaMajor, minor, d.ID(), n.Path, want))
		}
	}
	minors := make([]uint32, 0, len(nodes))
	for m := range nodes {
		minors = append(minors, m)
	}
	sort.Slice(minors, func(i, j int) bool { return minors[i] < minors[j] })
	for _, m := range minors {
		if !expected[m] {
			n := nodes[m]
			out = append(out, fmt.Sprintf("pod %s: device node %s (%d:%d) gives access to a GPU that is not allocated to the pod's claims", pod, n.Path, n.Major, n.Minor))
		}
	}
	return out
}

// gpuList renders NVML's GPUs for messages.
func gpuList(gpus []probe.GPU) string {
	if len(gpus) == 0 {
		return "no GPUs"
	}
	s := make([]string, len(gpus))
	for i, g := range gpus {
		s[i] = fmt.Sprintf("%s (minor %d)", g.UUID, g.Minor)
	}
	return strings.Join(s, ", ")
}

// nvmlGPUs are the GPUs NVML showed in the container by UUID, and the
// finding that a call of the initialized NVML failed there, if one did.
func nvmlGPUs(pod string, r probe.Report) ([]string, map[string]probe.GPU) {
	var out []string
	if r.NVML.Error != "" {
		out = append(out, fmt.Sprintf("pod %s: NVML in the container failed: %s", pod, r.NVML.Error))
	}
	seen := map[string]probe.GPU{}
	for _, g := range r.NVML.GPUs {
		seen[g.UUID] = g
	}
	return out, seen
}
