package profile

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/gpu"
)

// layoutSummary renders resolved instances as "gi<id>:<profile>@<start>[ci…]".
func layoutSummary(gis []gpu.GPUInstance) []string {
	var out []string
	for _, gi := range gis {
		var cis []string
		for _, ci := range gi.ComputeInstances {
			cis = append(cis, fmt.Sprintf("ci%d:%s@%d", ci.ID, ci.Profile.Name, ci.Start))
		}
		out = append(out, fmt.Sprintf("gi%d:%s@%d[%s]", gi.ID, gi.Profile.Name, gi.Start, strings.Join(cis, " ")))
	}
	return out
}

func TestMIGLayouts(t *testing.T) {
	t.Parallel()
	p, err := Builtin("mixed-mig")
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadFile("testdata/valid-mig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		gpu  *gpu.GPU
		want []string
	}{
		{"mixed-mig all-balanced", &p.Spec.GPUs[0], []string{
			"gi1:3g.20gb@4[ci0:3g.20gb@0]", "gi6:2g.10gb@2[ci0:2g.10gb@0]",
			"gi11:1g.5gb@0[ci0:1g.5gb@0]", "gi12:1g.5gb@1[ci0:1g.5gb@0]",
		}},
		{"mixed-mig explicit", &p.Spec.GPUs[1], []string{
			"gi1:3g.20gb@4[ci0:3g.20gb@0]", "gi5:2g.10gb@0[ci0:1c.2g.10gb@0 ci1:1c.2g.10gb@1]",
			"gi13:1g.5gb@2[ci0:1g.5gb@0]", "gi14:1g.5gb+me@3[ci0:1g.5gb+me@0]",
		}},
		{"mixed-mig enabled, empty", &p.Spec.GPUs[2], nil},
		{"mixed-mig no mig section", &p.Spec.GPUs[4], nil},
		{"mixed-mig all-disabled", &p.Spec.GPUs[5], nil},
		{"all-1g.5gb", &v.Spec.GPUs[0], []string{
			"gi7:1g.5gb@4[ci0:1g.5gb@0]", "gi8:1g.5gb@5[ci0:1g.5gb@0]", "gi9:1g.5gb@6[ci0:1g.5gb@0]",
			"gi11:1g.5gb@0[ci0:1g.5gb@0]", "gi12:1g.5gb@1[ci0:1g.5gb@0]", "gi13:1g.5gb@2[ci0:1g.5gb@0]",
			"gi14:1g.5gb@3[ci0:1g.5gb@0]",
		}},
		{"all-3g.40gb", &v.Spec.GPUs[1], []string{"gi1:3g.40gb@4[ci0:3g.40gb@0]", "gi2:3g.40gb@0[ci0:3g.40gb@0]"}},
		{"7g with CIs", &v.Spec.GPUs[2], []string{
			"gi0:7g.80gb@0[ci0:3c.7g.80gb@4 ci1:2c.7g.80gb@0 ci2:1c.7g.80gb@2 ci3:1c.7g.80gb@3]",
		}},
		{"all-1g.35gb", &v.Spec.GPUs[3], []string{
			"gi3:1g.35gb@4[ci0:1g.35gb@0]", "gi4:1g.35gb@6[ci0:1g.35gb@0]",
			"gi5:1g.35gb@0[ci0:1g.35gb@0]", "gi6:1g.35gb@2[ci0:1g.35gb@0]",
		}},
	}
	for _, tc := range tests {
		gis, err := tc.gpu.MIGLayout()
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, layoutSummary(gis)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
