package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
)

// containerEdits are the parts of CDI container edits an in-pod probe can
// observe: environment entries, device nodes and mount points. Hooks run in
// the runtime and leave no trace the kit can attribute, so they are not
// compared.
type containerEdits struct {
	// env holds "NAME=value" entries.
	env []string
	// nodes are device nodes by container path: "c 195:0".
	nodes map[string]string
	// mounts are mount destinations in the container.
	mounts []string
}

// cdiEditsOf resolves CDI device IDs against the specs in the cache and
// applies them to an empty OCI spec, as the container runtime does when it
// creates the container (the devices' specs' own edits included).
func cdiEditsOf(cache *cdi.Cache, ids ...string) (containerEdits, error) {
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if unresolved, err := cache.InjectDevices(spec, ids...); err != nil {
		if len(unresolved) > 0 {
			return containerEdits{}, fmt.Errorf("CDI devices %s are in no spec of the node's CDI directory", strings.Join(unresolved, ", "))
		}
		return containerEdits{}, fmt.Errorf("apply CDI devices %s: %w", strings.Join(ids, ", "), err)
	}
	e := containerEdits{env: spec.Process.Env, nodes: map[string]string{}}
	for _, d := range spec.Linux.Devices {
		e.nodes[d.Path] = fmt.Sprintf("%s %d:%d", d.Type, d.Major, d.Minor)
	}
	for _, m := range spec.Mounts {
		e.mounts = append(e.mounts, m.Destination)
	}
	return e, nil
}

// observed is what the probe saw, in the terms of containerEdits.
type observed struct {
	env    map[string]string
	nodes  map[string]string
	mounts map[string]bool
}

func observedOf(r probe.Report) observed {
	o := observed{env: r.Env, nodes: map[string]string{}, mounts: map[string]bool{}}
	for _, d := range r.Devices {
		o.nodes[d.Path] = fmt.Sprintf("%s %d:%d", d.Type, d.Major, d.Minor)
	}
	for _, m := range r.Mounts {
		o.mounts[m.Path] = true
	}
	return o
}

// checkCDIEdits compares the container with the CDI edits of the devices
// prepared for it (want) and of every other CDI device of the node (others,
// by CDI device ID): the container must show every edit of want and none of
// another device's edits that want does not also make.
func checkCDIEdits(pod string, want containerEdits, others map[string]containerEdits, seen observed) []string {
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

// checkPreparedDevices compares what the driver prepared for a claim, as the
// kubelet recorded it, with the claim's allocation: the driver must prepare
// exactly the devices allocated to it.
func checkPreparedDevices(claim string, allocated []observe.Device, prepared []preparedDevice) []string {
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
