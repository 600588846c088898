package conformance

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
)

// deviceEnv is the per-device environment variable of Config's
// DeviceEnvName and DeviceEnvValue patterns (declaration pattern syntax).
func (c *Config) deviceEnv() *declaration.EnvVariable {
	if c.DeviceEnvName == "" {
		return nil
	}
	value := c.DeviceEnvValue
	if value == "" {
		value = declaration.DefaultEnvValue
	}
	return &declaration.EnvVariable{Name: c.DeviceEnvName, Value: value}
}

// deviceValues are a device's values for the patterns: its name, its
// identity attribute and every attribute of the driver.
func deviceValues(driver, identity, name string, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) declaration.DeviceValues {
	v := declaration.DeviceValues{Name: name, Attribute: func(attr string) (string, bool) {
		a, ok := observe.LookupAttribute(attrs, driver, attr)
		if !ok {
			return "", false
		}
		return observe.AttributeString(a), true
	}}
	v.Identity, _ = v.Attribute(identity)
	return v
}

// checkEnvPattern compares the container's environment with the driver's
// per-device variable: the allocated devices' variables with their values,
// and no variable of another device of the driver on the node with that
// device's value.
func checkEnvPattern(pod, driver, identity string, env *declaration.EnvVariable, allocated []observe.Device, node []publishedDevice, r probe.Report) []string {
	var out []string
	mine := map[string]bool{}
	for _, d := range allocated {
		mine[d.ID()] = true
		v := deviceValues(driver, identity, d.Device, d.Attributes)
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
		v := deviceValues(driver, identity, d.Name, d.Attributes)
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
