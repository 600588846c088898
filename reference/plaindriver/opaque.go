package plaindriver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// The opaque configuration StyleStrictConfig decodes: parameters
// {"apiVersion": "<driver name>/v1", "kind": "DeviceConfig", "label":
// "<label>"}, nothing else (ConfigAPIVersion).
const (
	ConfigKind = "DeviceConfig"
	// maxLabel bounds a label, which becomes an environment variable's
	// value.
	maxLabel = 63
)

// DeviceConfig is the opaque configuration of StyleStrictConfig: the label
// every device of the requests it applies to shows in
// PLAIN_DEVICE_<index>_LABEL.
type DeviceConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Label      string `json:"label"`
}

// ConfigAPIVersion is the apiVersion of driver's opaque configuration:
// <driver>/v1.
func ConfigAPIVersion(driver string) string { return driver + "/v1" }

// decodeConfig decodes driver's parameters strictly: unknown fields, another
// apiVersion or kind, trailing data, and a label that is empty, longer than
// maxLabel or not printable ASCII are errors.
func decodeConfig(driver string, parameters []byte) (DeviceConfig, error) {
	var c DeviceConfig
	dec := json.NewDecoder(bytes.NewReader(parameters))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return DeviceConfig{}, fmt.Errorf("decode opaque config: %w", err)
	}
	if dec.More() {
		return DeviceConfig{}, errors.New("decode opaque config: data after the object")
	}
	if c.APIVersion != ConfigAPIVersion(driver) || c.Kind != ConfigKind {
		return DeviceConfig{}, fmt.Errorf("opaque config is %s %s, want %s %s", c.APIVersion, c.Kind, ConfigAPIVersion(driver), ConfigKind)
	}
	if c.Label == "" || len(c.Label) > maxLabel || strings.IndexFunc(c.Label, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
		return DeviceConfig{}, fmt.Errorf("opaque config: label %q must be 1 to %d printable ASCII characters", c.Label, maxLabel)
	}
	return c, nil
}

// claimLabels decodes the claim's opaque configs of driver, in order (a
// later config wins, as the class's come before the claim's), and returns
// the label of each of the driver's allocation results, by request. A
// config names requests ("req", or "req/sub" of a prioritized list; "req"
// covers its subrequests) or none for all.
func claimLabels(claim *resourceapi.ResourceClaim, driver string) (map[string]string, error) {
	if claim.Status.Allocation == nil {
		return nil, nil
	}
	labels := map[string]string{}
	for i, c := range claim.Status.Allocation.Devices.Config {
		if c.Opaque == nil || c.Opaque.Driver != driver {
			continue
		}
		cfg, err := decodeConfig(driver, c.Opaque.Parameters.Raw)
		if err != nil {
			return nil, fmt.Errorf("allocation config %d (%s): %w", i, c.Source, err)
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if r.Driver == driver && appliesTo(c.Requests, r.Request) {
				labels[r.Request] = cfg.Label
			}
		}
	}
	return labels, nil
}

// appliesTo says whether a config for requests covers the result of
// request.
func appliesTo(requests []string, request string) bool {
	if len(requests) == 0 {
		return true
	}
	parent, _, _ := strings.Cut(request, "/")
	for _, r := range requests {
		if r == request || r == parent {
			return true
		}
	}
	return false
}
