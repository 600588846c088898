package observe

import (
	"fmt"
	"sort"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/probe"
)

// Injected is what a driver declares a container gets per device: the
// values its patterns are expanded with (the driver's name for bare
// attribute names, the identity attribute) and the patterns.
type Injected struct {
	Driver   string
	Identity string
	// Env is the per-device variable; nil: none declared.
	Env         *declaration.EnvVariable
	DeviceNodes []declaration.DeviceNode
	Mounts      []declaration.Mount
}

// Values are what the declaration's placeholders stand for, for device d.
func (in Injected) Values(d Device) declaration.DeviceValues {
	return DeviceValues(in.Driver, in.Identity, d.Device, d.Attributes)
}

// nodeNumbers renders a node's type and numbers as "c 195:3".
func nodeNumbers(typ string, major, minor uint32) string {
	return fmt.Sprintf("%s %d:%d", typ, major, minor)
}

// matches says whether the container's node n is the declared node e:
// the same type and numbers where declared.
func matches(e declaration.ExpandedNode, n probe.DeviceNode) bool {
	return (e.Type == "" || e.Type == n.Type) && (!e.HasMajor || e.Major == n.Major) && (!e.HasMinor || e.Minor == n.Minor)
}

// CheckDeclaredDeviceNodes compares the container's device nodes with the
// declared ones (in.DeviceNodes): every allocated device's node at its
// path, of its declared type and numbers; no node of another device of the
// driver on the node (node: the node's devices, allocated or not), at its
// path or, where the declaration gives both numbers, at any path.
// Findings: a pattern cannot be expanded for an allocated device; its node
// is missing or another device; another device's node is there, as in
//
//	pod p: device node /dev/plain2 (c 240:2) of device n/dev-2 is in the container, which is not allocated to the pod's claims
//
// Devices of the node the patterns cannot name are not looked for, nor
// nodes that an allocated device's declaration also names.
func CheckDeclaredDeviceNodes(pod string, in Injected, allocated, node []Device, r probe.Report) []string {
	var out []string
	byPath := map[string]probe.DeviceNode{}
	for _, n := range r.Devices {
		byPath[n.Path] = n
	}
	mine, minePaths, mineNumbers := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, d := range allocated {
		mine[d.ID()] = true
		for _, pattern := range in.DeviceNodes {
			e, err := pattern.Expand(in.Values(d))
			if err != nil {
				out = append(out, fmt.Sprintf("pod %s: allocated device %s: device node: %v", pod, d.ID(), err))
				continue
			}
			minePaths[e.Path] = true
			n, ok := byPath[e.Path]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("pod %s: no device node %s for allocated device %s (claim %s)", pod, e, d.ID(), d.Claim))
				continue
			case !matches(e, n):
				out = append(out, fmt.Sprintf("pod %s: device node %s of allocated device %s is %s, the declaration says %s", pod, e.Path, d.ID(), nodeNumbers(n.Type, n.Major, n.Minor), e))
			}
			mineNumbers[nodeNumbers(n.Type, n.Major, n.Minor)] = true
		}
	}
	for _, d := range node {
		if mine[d.ID()] {
			continue
		}
		for _, pattern := range in.DeviceNodes {
			e, err := pattern.Expand(in.Values(d))
			if err != nil || minePaths[e.Path] {
				continue // a device the pattern cannot name, or a node an allocated device has too
			}
			if n, ok := byPath[e.Path]; ok {
				out = append(out, fmt.Sprintf("pod %s: device node %s (%s) of device %s is in the container, which is not allocated to the pod's claims", pod, n.Path, nodeNumbers(n.Type, n.Major, n.Minor), d.ID()))
				continue
			}
			if !e.HasMajor || !e.HasMinor {
				continue
			}
			for _, n := range r.Devices {
				if matches(e, n) && !mineNumbers[nodeNumbers(n.Type, n.Major, n.Minor)] {
					out = append(out, fmt.Sprintf("pod %s: device node %s is %s, device %s's node %s, which is not allocated to the pod's claims", pod, n.Path, nodeNumbers(n.Type, n.Major, n.Minor), d.ID(), e))
				}
			}
		}
	}
	return out
}

// CheckDeclaredMounts compares the container's mounts with the declared
// ones (in.Mounts): every allocated device's mount point, read-only where
// declared; no mount point of another device of the driver on the node.
// The last mount at a path is the one the container sees. Findings: a
// pattern cannot be expanded for an allocated device; its mount is missing
// or read-write where the declaration says read-only; another device's
// mount is there, as in
//
//	pod p: no mount /var/run/plain/dev-1 for allocated device n/dev-1 (claim c)
func CheckDeclaredMounts(pod string, in Injected, allocated, node []Device, r probe.Report) []string {
	var out []string
	byPath := map[string]probe.Mount{}
	for _, m := range r.Mounts {
		byPath[m.Path] = m
	}
	mine, minePaths := map[string]bool{}, map[string]bool{}
	for _, d := range allocated {
		mine[d.ID()] = true
		for _, pattern := range in.Mounts {
			p, err := pattern.ExpandPath(in.Values(d))
			if err != nil {
				out = append(out, fmt.Sprintf("pod %s: allocated device %s: mount: %v", pod, d.ID(), err))
				continue
			}
			minePaths[p] = true
			m, ok := byPath[p]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("pod %s: no mount %s for allocated device %s (claim %s)", pod, p, d.ID(), d.Claim))
			case pattern.ReadOnly && !m.ReadOnly:
				out = append(out, fmt.Sprintf("pod %s: mount %s of allocated device %s is read-write, the declaration says read-only", pod, p, d.ID()))
			}
		}
	}
	for _, d := range node {
		if mine[d.ID()] {
			continue
		}
		for _, pattern := range in.Mounts {
			p, err := pattern.ExpandPath(in.Values(d))
			if err != nil || minePaths[p] {
				continue
			}
			if _, ok := byPath[p]; ok {
				out = append(out, fmt.Sprintf("pod %s: mount %s of device %s is in the container, which is not allocated to the pod's claims", pod, p, d.ID()))
			}
		}
	}
	return out
}

// ShownDevices are the devices of node (pool/device, sorted) that the
// container shows by what the driver declares it injects: the device's
// variable with its value, one of its device nodes (at its path, of its
// type and numbers), or one of its mount points; with nvml, its identity
// among the GPUs and MIG devices NVML lists. It maps one container's own
// report to device identities, so that two pods' reports can be compared
// with each other.
func ShownDevices(in Injected, nvml bool, node []Device, r probe.Report) []string {
	nodes := map[string]probe.DeviceNode{}
	for _, n := range r.Devices {
		nodes[n.Path] = n
	}
	mounts := map[string]bool{}
	for _, m := range r.Mounts {
		mounts[m.Path] = true
	}
	uuids := map[string]bool{}
	if nvml && r.NVML.Unavailable == "" {
		for _, g := range r.NVML.GPUs {
			uuids[g.UUID] = true
			for _, m := range g.MIGDevices {
				uuids[m.UUID] = true
			}
		}
	}
	shown := func(d Device) bool {
		v := in.Values(d)
		if in.Env != nil {
			name, errName := in.Env.ExpandName(v)
			value, errValue := in.Env.ExpandValue(v)
			if got, ok := r.Env[name]; ok && errName == nil && errValue == nil && got == value {
				return true
			}
		}
		for _, pattern := range in.DeviceNodes {
			if e, err := pattern.Expand(v); err == nil {
				if n, ok := nodes[e.Path]; ok && matches(e, n) {
					return true
				}
			}
		}
		for _, pattern := range in.Mounts {
			if p, err := pattern.ExpandPath(v); err == nil && mounts[p] {
				return true
			}
		}
		return v.Identity != "" && uuids[v.Identity]
	}
	out := []string{}
	for _, d := range node {
		if shown(d) {
			out = append(out, d.ID())
		}
	}
	sort.Strings(out)
	return out
}
