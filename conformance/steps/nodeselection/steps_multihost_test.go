package nodeselection

import (
	"testing"

	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
)

func TestSliceNodeSelectionsSetWhatTheyName(t *testing.T) {
	t.Parallel()
	w := &world{World: &kit.World{Ns: "drakit-x"}}
	for name, edit := range kit.SliceNodeSelections {
		s := w.bareTestSlice("nodes")
		edit(s)
		sp, d := s.Spec, s.Spec.Devices[0]
		set := 0
		for _, b := range []bool{sp.NodeName != nil, sp.NodeSelector != nil, sp.AllNodes != nil, sp.PerDeviceNodeSelection != nil} {
			if b {
				set++
			}
		}
		deviceSet := d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil
		switch {
		case name == "names no node" && (set != 0 || deviceSet):
			t.Errorf("%q: the slice names nodes: %+v", name, sp)
		case name != "names no node" && set == 0:
			t.Errorf("%q: the slice sets no node selection field", name)
		}
	}
	if s := w.perDeviceSlice("per-device"); !ptr.Deref(s.Spec.PerDeviceNodeSelection, false) || s.Spec.AllNodes != nil || len(s.Spec.Devices) != 3 {
		t.Errorf("perDeviceSlice: %+v", s.Spec)
	}
}
