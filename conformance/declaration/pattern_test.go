package declaration

import (
	"errors"
	"testing"
)

func TestExpand(t *testing.T) {
	t.Parallel()
	attrs := map[string]string{"index": "0", "gpu.example.com/serial": "sn-7"}
	values := DeviceValues{
		Name:     "gpu-0-mig-1g10gb-3",
		Identity: "MIG-0a1b",
		Attribute: func(name string) (string, bool) {
			v, ok := attrs[name]
			return v, ok
		},
	}
	tests := []struct {
		env       EnvVariable
		wantName  string
		wantValue string
	}{
		{EnvVariable{Name: "DRAKIT_DEVICE_{device}", Value: "{identity}"}, "DRAKIT_DEVICE_GPU_0_MIG_1G10GB_3", "MIG-0a1b"},
		{EnvVariable{Name: "GPU_DEVICE_{attribute:index}", Value: "{device}"}, "GPU_DEVICE_0", "gpu-0-mig-1g10gb-3"},
		{EnvVariable{Name: "x_{identity}_{attribute:gpu.example.com/serial}", Value: "id={identity}; serial={attribute:gpu.example.com/serial}"},
			"x_MIG_0A1B_SN_7", "id=MIG-0a1b; serial=sn-7"},
	}
	for _, tc := range tests {
		name, err := tc.env.ExpandName(values)
		if err != nil || name != tc.wantName {
			t.Errorf("ExpandName(%q) = %q, %v; want %q", tc.env.Name, name, err, tc.wantName)
		}
		value, err := tc.env.ExpandValue(values)
		if err != nil || value != tc.wantValue {
			t.Errorf("ExpandValue(%q) = %q, %v; want %q", tc.env.Value, value, err, tc.wantValue)
		}
	}
}

func TestExpandMissingValue(t *testing.T) {
	t.Parallel()
	// A dynamic partition has no identity before it is prepared, and no
	// attribute function means no attributes.
	values := DeviceValues{Name: "gpu-0-mig-1g10gb-3"}
	env := EnvVariable{Name: "GPU_{attribute:index}", Value: "{identity}"}
	if _, err := env.ExpandName(values); !errors.Is(err, ErrMissingValue) {
		t.Errorf("ExpandName without the attribute: %v", err)
	}
	_, err := env.ExpandValue(values)
	if !errors.Is(err, ErrMissingValue) {
		t.Fatalf("ExpandValue without identity: %v", err)
	}
	const want = `expand pattern "{identity}" for device gpu-0-mig-1g10gb-3: {identity}: the device does not publish a value the pattern needs`
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestExpandInvalidPattern(t *testing.T) {
	t.Parallel()
	env := EnvVariable{Name: "GPU_{devise}", Value: "{identity"}
	if _, err := env.ExpandName(DeviceValues{Name: "gpu-0"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("ExpandName of an unknown placeholder: %v", err)
	}
	if _, err := env.ExpandValue(DeviceValues{Name: "gpu-0", Identity: "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("ExpandValue of an unclosed placeholder: %v", err)
	}
}

func TestValidatePatterns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern   string
		name, val bool // valid as a name, as a value
	}{
		{"DRAKIT_DEVICE_{device}", true, true},
		{"_{identity}", true, true},
		{"a{device}{identity}b", true, true},
		{"GPU_{attribute:example.com/index}", true, true},
		{"{device}", false, true},
		{"url=https://{device}/x", false, true},
		{"GPU", false, false},
		{"", false, false},
		{"GPU_{}", false, false},
		{"GPU_{attribute:}", false, false},
		{"GPU_{attribute:a/b/c}", false, false},
		{"GPU_{{device}}", false, false},
		{"GPU_{device}}", false, false},
		{"{device}\x00", false, false},
	} {
		if err := validateEnvName(tc.pattern); (err == nil) != tc.name {
			t.Errorf("validateEnvName(%q) = %v, want valid %v", tc.pattern, err, tc.name)
		}
		if err := validateEnvValue(tc.pattern); (err == nil) != tc.val {
			t.Errorf("validateEnvValue(%q) = %v, want valid %v", tc.pattern, err, tc.val)
		}
	}
}
