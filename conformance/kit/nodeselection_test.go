package kit

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestDeviceNodes(t *testing.T) {
	t.Parallel()
	node := func(name, zone string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{hostnameLabel: name, "zone": zone}}}
	}
	nodes := []corev1.Node{node("n1", "a"), node("n2", "a"), node("n3", "b")}
	zone := func(z string) *corev1.NodeSelector {
		return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}},
		}}}
	}
	slice := func(spec resourceapi.ResourceSliceSpec) resourceapi.ResourceSlice {
		return resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: spec}
	}
	perDevice := resourceapi.ResourceSliceSpec{PerDeviceNodeSelection: ptr.To(true)}
	tests := map[string]struct {
		slice  resourceapi.ResourceSlice
		device resourceapi.Device
		want   []string
	}{
		"the slice's node":                 {slice: slice(resourceapi.ResourceSliceSpec{NodeName: ptr.To("n2")}), want: []string{"n2"}},
		"a node the cluster lacks":         {slice: slice(resourceapi.ResourceSliceSpec{NodeName: ptr.To("gone")})},
		"the slice's selector":             {slice: slice(resourceapi.ResourceSliceSpec{NodeSelector: zone("a")}), want: []string{"n1", "n2"}},
		"all nodes":                        {slice: slice(resourceapi.ResourceSliceSpec{AllNodes: ptr.To(true)}), want: []string{"n1", "n2", "n3"}},
		"the device's selector":            {slice: slice(perDevice), device: resourceapi.Device{NodeSelector: zone("b")}, want: []string{"n3"}},
		"the device's node":                {slice: slice(perDevice), device: resourceapi.Device{NodeName: ptr.To("n1")}, want: []string{"n1"}},
		"the device on all nodes":          {slice: slice(perDevice), device: resourceapi.Device{AllNodes: ptr.To(true)}, want: []string{"n1", "n2", "n3"}},
		"device fields without per-device": {slice: slice(resourceapi.ResourceSliceSpec{NodeName: ptr.To("n1")}), device: resourceapi.Device{NodeSelector: zone("b")}, want: []string{"n1"}},
		"per-device without a selection":   {slice: slice(perDevice)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := deviceNodes(tc.slice, tc.device, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("deviceNodes = %v, want %v", got, tc.want)
			}
		})
	}
	bad := slice(resourceapi.ResourceSliceSpec{NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: "Near"}},
	}}}})
	if _, err := deviceNodes(bad, resourceapi.Device{Name: "d"}, nodes); err == nil {
		t.Error("a selector with an unknown operator: no error")
	}
}

func TestSliceNodeSelectionsSetWhatTheyName(t *testing.T) {
	t.Parallel()
	w := &World{Ns: "drakit-x"}
	for name, edit := range sliceNodeSelections {
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

func TestMultiNodeClasses(t *testing.T) {
	t.Parallel()
	var c DriverSettings
	c.DriverName, c.DeviceClassName = "tpu.drakit.dev", "tpu.drakit.dev"
	if got := c.multiNodeClasses(); strings.Join(got, ",") != "tpu.drakit.dev" {
		t.Errorf("no torus: %v", got)
	}
	c.TorusSubsliceClassName = "subslice.tpu.drakit.dev"
	if got := c.multiNodeClasses(); strings.Join(got, ",") != "tpu.drakit.dev,subslice.tpu.drakit.dev" {
		t.Errorf("torus: %v", got)
	}
}
