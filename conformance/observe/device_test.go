package observe

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

const testDriver = "gpu.drakit.dev"

type attrs = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute

func TestLookupAttribute(t *testing.T) {
	t.Parallel()
	a := attrs{
		"uuid":                            {StringValue: ptr.To("bare")},
		"gpu.drakit.dev/model":            {StringValue: ptr.To("qualified")},
		"resource.kubernetes.io/numaNode": {IntValue: ptr.To[int64](1)},
	}
	tests := []struct {
		attr, want string
		ok         bool
	}{
		{"uuid", "bare", true},
		{"gpu.drakit.dev/uuid", "bare", true},
		{"model", "qualified", true},
		{"gpu.drakit.dev/model", "qualified", true},
		{"resource.kubernetes.io/numaNode", "1", true},
		{"numaNode", "", false},
		{"other.example.com/uuid", "", false},
	}
	for _, tc := range tests {
		got, ok := LookupAttribute(a, testDriver, tc.attr)
		if ok != tc.ok || (ok && AttributeString(got) != tc.want) {
			t.Errorf("LookupAttribute(%q) = %q, %t; want %q, %t", tc.attr, AttributeString(got), ok, tc.want, tc.ok)
		}
	}
}

func TestAttributeString(t *testing.T) {
	t.Parallel()
	tests := map[string]resourceapi.DeviceAttribute{
		"GPU-1":     {StringValue: ptr.To("GPU-1")},
		"-3":        {IntValue: ptr.To[int64](-3)},
		"true":      {BoolValue: ptr.To(true)},
		"550.54.15": {VersionValue: ptr.To("550.54.15")},
		"[a,b]":     {StringValues: []string{"a", "b"}},
		"[1,2]":     {IntValues: []int64{1, 2}},
		"[true]":    {BoolValues: []bool{true}},
		"[1.0.0]":   {VersionValues: []string{"1.0.0"}},
		"<empty>":   {},
	}
	for want, a := range tests {
		if got := AttributeString(a); got != want {
			t.Errorf("AttributeString(%+v) = %q, want %q", a, got, want)
		}
	}
}
