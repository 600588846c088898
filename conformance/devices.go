package conformance

import (
	"fmt"
	"sort"
	"strings"

	"drakit.dev/drakit/conformance/observe"
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

// checkNVML compares the GPUs NVML enumerates inside the container with the
// devices allocated to the pod's claims, identified by their UUID attribute.
func checkNVML(pod, uuidAttr string, allocated []observe.Device, r probe.Report) []string {
	var out []string
	if r.NVML.Error != "" {
		out = append(out, fmt.Sprintf("pod %s: NVML in the container failed: %s", pod, r.NVML.Error))
	}
	seen := map[string]probe.GPU{}
	for _, g := range r.NVML.GPUs {
		seen[g.UUID] = g
	}
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

// checkDeviceNodes compares the container's GPU device nodes with the
// allocated GPUs. NVML inside the container maps each allocated UUID to its
// minor number; every allocated GPU needs /dev/nvidia<minor> with 195:<minor>
// and no other GPU node may be present.
func checkDeviceNodes(pod string, allocated []observe.Device, r probe.Report) []string {
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

// deviceEnvName is the variable the reference driver sets for a device:
// prefix plus the device name upper-cased, other characters than A-Z and
// 0-9 replaced by "_".
func deviceEnvName(prefix, device string) string {
	b := []byte(strings.ToUpper(device))
	for i, c := range b {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	return prefix + string(b)
}

// checkEnv compares the container's per-device environment variables with
// the allocated devices: one <prefix><DEVICE>=<uuid> per device, no others.
func checkEnv(pod, prefix string, allocated []observe.Device, r probe.Report) []string {
	var out []string
	want := map[string]observe.Device{}
	for _, d := range allocated {
		name := deviceEnvName(prefix, d.Device)
		want[name] = d
		got, ok := r.Env[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("pod %s: no environment variable %s for allocated device %s (uuid %s)", pod, name, d.ID(), d.UUID))
		case d.UUID != "" && got != d.UUID:
			out = append(out, fmt.Sprintf("pod %s: %s=%s, but allocated device %s has uuid %s", pod, name, got, d.ID(), d.UUID))
		}
	}
	names := make([]string, 0, len(r.Env))
	for k := range r.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := want[k]; !ok && strings.HasPrefix(k, prefix) {
			out = append(out, fmt.Sprintf("pod %s: environment variable %s=%s names a device that is not allocated to the pod's claims", pod, k, r.Env[k]))
		}
	}
	return out
}

// nvmlUUIDs is the sorted set of GPU UUIDs in a report.
func nvmlUUIDs(r probe.Report) []string {
	out := make([]string, 0, len(r.NVML.GPUs))
	for _, g := range r.NVML.GPUs {
		out = append(out, g.UUID)
	}
	sort.Strings(out)
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
