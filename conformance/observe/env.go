package observe

import (
	"fmt"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/probe"
)

// DeviceEnvName is the variable the reference driver sets for a device:
// prefix plus the device name upper-cased, other characters than A-Z and
// 0-9 replaced by "_".
func DeviceEnvName(prefix, device string) string {
	b := []byte(strings.ToUpper(device))
	for i, c := range b {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	return prefix + string(b)
}

// CheckEnv compares the container's per-device environment variables with
// the allocated devices: one <prefix><DEVICE>=<uuid> per device (named by
// DeviceEnvName), no others. Findings: a device's variable is missing or
// holds another UUID; a variable with the prefix names no allocated device,
// as in
//
//	pod p: environment variable DRAKIT_DEVICE_GPU_5=GPU-5 names a device that is not allocated to the pod's claims
func CheckEnv(pod, prefix string, allocated []Device, r probe.Report) []string {
	var out []string
	want := map[string]Device{}
	for _, d := range allocated {
		name := DeviceEnvName(prefix, d.Device)
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

// DeviceValues are a device's values for the declaration's patterns: its
// name, its identity attribute and every attribute of the driver.
func DeviceValues(driver, identity, name string, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) declaration.DeviceValues {
	v := declaration.DeviceValues{Name: name, Attribute: func(attr string) (string, bool) {
		a, ok := LookupAttribute(attrs, driver, attr)
		if !ok {
			return "", false
		}
		return AttributeString(a), true
	}}
	v.Identity, _ = v.Attribute(identity)
	return v
}

// CheckEnvPattern compares the container's environment with the driver's
// per-device variable env (declaration pattern syntax, expanded with each
// device's name, identity attribute and attributes): the allocated devices'
// variables with their values, and no variable of another device of the
// driver on the node (node, the node's devices, allocated or not) with that
// device's value. Findings: the pattern cannot be expanded for an allocated
// device; its variable is missing or has another value; another device's
// variable is there with that device's value, as in
//
//	pod p: environment variable PLAIN_DEVICE_0=dev-0 names device n/dev-0, which is not allocated to the pod's claims
//
// Devices of the node the pattern cannot name are not looked for.
func CheckEnvPattern(pod, driver, identity string, env *declaration.EnvVariable, allocated, node []Device, r probe.Report) []string {
	var out []string
	mine := map[string]bool{}
	for _, d := range allocated {
		mine[d.ID()] = true
		v := DeviceValues(driver, identity, d.Device, d.Attributes)
		name, err := env.ExpandName(v)
		if err != nil {
			out = append(out, fmt.Sprintf("pod %s: allocated device %s: %v", pod, d.ID(), err))
			continue
		}
		value, err := env.ExpandValue(v)
		if err != nil {
			out = append(out, fmt.Sprintf("pod %s: allocated device %s: %v", pod, d.ID(), err))
			continue
		}
		switch got, ok := r.Env[name]; {
		case !ok:
			out = append(out, fmt.Sprintf("pod %s: no environment variable %s for allocated device %s (want %s=%s)", pod, name, d.ID(), name, value))
		case got != value:
			out = append(out, fmt.Sprintf("pod %s: %s=%s, allocated device %s wants %s=%s", pod, name, got, d.ID(), name, value))
		}
	}
	for _, d := range node {
		if mine[d.ID()] {
			continue
		}
		v := DeviceValues(driver, identity, d.Device, d.Attributes)
		name, errName := env.ExpandName(v)
		value, errValue := env.ExpandValue(v)
		if errName != nil || errValue != nil {
			continue // a device without the attributes the pattern names cannot be named in the container either
		}
		if got, ok := r.Env[name]; ok && got == value {
			out = append(out, fmt.Sprintf("pod %s: environment variable %s=%s names device %s, which is not allocated to the pod's claims", pod, name, value, d.ID()))
		}
	}
	return out
}
