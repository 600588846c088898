package declaration

import (
	"errors"
	"testing"
)

func TestDeviceNodeExpand(t *testing.T) {
	t.Parallel()
	attrs := map[string]string{"minor": "3", "name": "a/b", "word": "x"}
	v := DeviceValues{Name: "gpu-3", Identity: "GPU-3", Attribute: func(n string) (string, bool) { a, ok := attrs[n]; return a, ok }}
	tests := map[string]struct {
		node    DeviceNode
		want    ExpandedNode
		wantErr error
	}{
		"numbers": {node: DeviceNode{Path: "/dev/nvidia{attribute:minor}", Type: CharDevice, Major: "195", Minor: "{attribute:minor}"},
			want: ExpandedNode{Path: "/dev/nvidia3", Type: CharDevice, Major: 195, Minor: 3, HasMajor: true, HasMinor: true}},
		"path only":       {node: DeviceNode{Path: "/dev/x/{device}"}, want: ExpandedNode{Path: "/dev/x/gpu-3"}},
		"missing value":   {node: DeviceNode{Path: "/dev/x{attribute:absent}"}, wantErr: ErrMissingValue},
		"slash in value":  {node: DeviceNode{Path: "/dev/x{attribute:name}"}, wantErr: ErrBadValue},
		"minor not a num": {node: DeviceNode{Path: "/dev/x{device}", Minor: "{attribute:word}"}, wantErr: ErrBadValue},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if err := tc.node.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := tc.node.Expand(v)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("Expand = %v, %v; want an error wrapping %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Expand = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if s := (ExpandedNode{Path: "/dev/x", HasMinor: true, Minor: 2}).String(); s != "/dev/x (c|b *:2)" {
		t.Errorf("String = %q", s)
	}
}

func TestMountExpandPath(t *testing.T) {
	t.Parallel()
	m := Mount{Path: "/var/run/plain/{device}", ReadOnly: true}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, err := m.ExpandPath(DeviceValues{Name: "dev-1"}); err != nil || got != "/var/run/plain/dev-1" {
		t.Errorf("ExpandPath = %q, %v", got, err)
	}
	if got, err := m.ExpandPath(DeviceValues{Name: ".."}); !errors.Is(err, ErrBadValue) {
		t.Errorf("ExpandPath of .. = %q, %v; want ErrBadValue", got, err)
	}
}
