package observe

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"drakit.dev/drakit/conformance/probe"
)

// ContainerEdits are the parts of CDI container edits an in-pod probe can
// observe: environment entries, device nodes and mount points. Hooks run in
// the runtime and leave no trace the kit can attribute, so they are not
// compared.
type ContainerEdits struct {
	// env holds "NAME=value" entries.
	env []string
	// nodes are device nodes by container path: "c 195:0".
	nodes map[string]string
	// mounts are mount destinations in the container.
	mounts []string
}

// CDIEditsOf resolves CDI device IDs against the specs in the cache and
// applies them to an empty OCI spec, as the container runtime does when it
// creates the container (the devices' specs' own edits included). It fails
// when a device is in no spec or its edits cannot be applied.
func CDIEditsOf(cache *cdi.Cache, ids ...string) (ContainerEdits, error) {
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if unresolved, err := cache.InjectDevices(spec, ids...); err != nil {
		if len(unresolved) > 0 {
			return ContainerEdits{}, fmt.Errorf("CDI devices %s are in no spec of the node's CDI directory", strings.Join(unresolved, ", "))
		}
		return ContainerEdits{}, fmt.Errorf("apply CDI devices %s: %w", strings.Join(ids, ", "), err)
	}
	e := ContainerEdits{env: spec.Process.Env, nodes: map[string]string{}}
	for _, d := range spec.Linux.Devices {
		e.nodes[d.Path] = fmt.Sprintf("%s %d:%d", d.Type, d.Major, d.Minor)
	}
	for _, m := range spec.Mounts {
		e.mounts = append(e.mounts, m.Destination)
	}
	return e, nil
}

// EnvNames are the names of the environment variables the edits set.
func (e ContainerEdits) EnvNames() []string {
	out := make([]string, 0, len(e.env))
	for _, kv := range e.env {
		name, _, _ := strings.Cut(kv, "=")
		out = append(out, name)
	}
	return out
}

// ShownIn says whether the container shows every edit of e, and e makes
// at least one: every environment entry with its value, every device node
// of its type and numbers, every mount point.
func (e ContainerEdits) ShownIn(seen Observed) bool {
	if len(e.env) == 0 && len(e.nodes) == 0 && len(e.mounts) == 0 {
		return false
	}
	for _, kv := range e.env {
		name, value, _ := strings.Cut(kv, "=")
		if got, ok := seen.env[name]; !ok || got != value {
			return false
		}
	}
	for path, want := range e.nodes {
		if seen.nodes[path] != want {
			return false
		}
	}
	for _, m := range e.mounts {
		if !seen.mounts[m] {
			return false
		}
	}
	return true
}

// Observed is what the probe saw, in the terms of ContainerEdits.
type Observed struct {
	env    map[string]string
	nodes  map[string]string
	mounts map[string]bool
}

// ObservedOf is the environment, device nodes and mount points of a probe's
// report.
func ObservedOf(r probe.Report) Observed {
	o := Observed{env: r.Env, nodes: map[string]string{}, mounts: map[string]bool{}}
	for _, d := range r.Devices {
		o.nodes[d.Path] = fmt.Sprintf("%s %d:%d", d.Type, d.Major, d.Minor)
	}
	for _, m := range r.Mounts {
		o.mounts[m.Path] = true
	}
	return o
}

// CheckCDIEdits compares the container (seen) with the CDI edits of the
// devices prepared for it (want) and of every other CDI device of the node
// (others, by CDI device ID): the container must show every edit of want
// and none of another device's edits that want does not also make.
// Findings: an environment entry of want is missing or has another value; a
// device node of want is missing or another device; a mount of want is
// missing; an environment entry, device node or mount of another device is
// there, as in
//
//	pod p: the CDI edits prepared for its claims mount /var/run/plain/dev-0, the container has no mount there
func CheckCDIEdits(pod string, want ContainerEdits, others map[string]ContainerEdits, seen Observed) []string {
	var out []string
	for _, kv := range want.env {
		name, value, _ := strings.Cut(kv, "=")
		got, ok := seen.env[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("pod %s: the CDI edits prepared for its claims set %s, the container has no %s", pod, kv, name))
		case got != value:
			out = append(out, fmt.Sprintf("pod %s: the CDI edits prepared for its claims set %s, the container has %s=%s", pod, kv, name, got))
		}
	}
	for _, path := range slices.Sorted(maps.Keys(want.nodes)) {
		switch got, ok := seen.nodes[path]; {
		case !ok:
			out = append(out, fmt.Sprintf("pod %s: the CDI edits prepared for its claims add device node %s (%s), the container has none", pod, path, want.nodes[path]))
		case got != want.nodes[path]:
			out = append(out, fmt.Sprintf("pod %s: device node %s is %s in the container, the CDI edits prepared for its claims make it %s", pod, path, got, want.nodes[path]))
		}
	}
	for _, m := range want.mounts {
		if !seen.mounts[m] {
			out = append(out, fmt.Sprintf("pod %s: the CDI edits prepared for its claims mount %s, the container has no mount there", pod, m))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(others)) {
		e := others[id]
		for _, kv := range e.env {
			if slices.Contains(want.env, kv) {
				continue
			}
			name, value, _ := strings.Cut(kv, "=")
			if got, ok := seen.env[name]; ok && got == value {
				out = append(out, fmt.Sprintf("pod %s: the container has %s, an edit of CDI device %s, which was not prepared for its claims", pod, kv, id))
			}
		}
		for _, path := range slices.Sorted(maps.Keys(e.nodes)) {
			if _, mine := want.nodes[path]; !mine && seen.nodes[path] != "" {
				out = append(out, fmt.Sprintf("pod %s: the container has device node %s of CDI device %s, which was not prepared for its claims", pod, path, id))
			}
		}
		for _, m := range e.mounts {
			if !slices.Contains(want.mounts, m) && seen.mounts[m] {
				out = append(out, fmt.Sprintf("pod %s: the container has mount %s of CDI device %s, which was not prepared for its claims", pod, m, id))
			}
		}
	}
	return out
}

// PreparedDevice is one device a driver prepared for a claim, as the
// kubelet records NodePrepareResources' answer in its DRA checkpoint (the
// field names are the checkpoint's).
type PreparedDevice struct {
	PoolName     string
	DeviceName   string
	RequestNames []string
	CDIDeviceIDs []string
}

// CheckPreparedDevices compares what the driver prepared for a claim, as the
// kubelet recorded it, with the claim's allocation (the devices of allocated
// whose Claim is claim): the driver must prepare exactly the devices
// allocated to it. Findings: a prepared device is not allocated, or has no
// CDI device; an allocated device was not prepared, as in
//
//	claim c: device node/dev-0 is allocated to the claim, the driver did not prepare it
func CheckPreparedDevices(claim string, allocated []Device, prepared []PreparedDevice) []string {
	want := map[string]bool{}
	for _, d := range allocated {
		if d.Claim == claim {
			want[d.ID()] = true
		}
	}
	got := map[string]bool{}
	var out []string
	for _, d := range prepared {
		id := d.PoolName + "/" + d.DeviceName
		got[id] = true
		if !want[id] {
			out = append(out, fmt.Sprintf("claim %s: the driver prepared device %s, which is not allocated to the claim", claim, id))
		}
		if len(d.CDIDeviceIDs) == 0 {
			out = append(out, fmt.Sprintf("claim %s: the driver prepared device %s without a CDI device: the container cannot get it", claim, id))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if !got[id] {
			out = append(out, fmt.Sprintf("claim %s: device %s is allocated to the claim, the driver did not prepare it", claim, id))
		}
	}
	return out
}

// CheckNodesUnder compares the container's device nodes below prefix (for
// NVIDIA's, "/dev/nvidia") with those the CDI edits prepared for it inject
// there: exactly the same paths. It catches a node the runtime or another
// mechanism added that no CDI device of the pod's claims asked for, as in
//
//	pod p: the container has /dev/nvidia3, which none of the CDI edits prepared for its claims injects
func CheckNodesUnder(pod, prefix string, want ContainerEdits, seen Observed) []string {
	var out []string
	for _, path := range slices.Sorted(maps.Keys(want.nodes)) {
		if strings.HasPrefix(path, prefix) {
			if _, ok := seen.nodes[path]; !ok {
				out = append(out, fmt.Sprintf("pod %s: the CDI edits prepared for its claims inject %s, which the container does not have", pod, path))
			}
		}
	}
	for _, path := range slices.Sorted(maps.Keys(seen.nodes)) {
		if _, ok := want.nodes[path]; strings.HasPrefix(path, prefix) && !ok {
			out = append(out, fmt.Sprintf("pod %s: the container has %s, which none of the CDI edits prepared for its claims injects", pod, path))
		}
	}
	return out
}
