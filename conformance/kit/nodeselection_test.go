package kit

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestDeviceNodes(t *testing.T) {
	t.Parallel()
	node := func(name, zone string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{HostnameLabel: name, "zone": zone}}}
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
			got, err := DeviceNodes(tc.slice, tc.device, nodes)
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
	if _, err := DeviceNodes(bad, resourceapi.Device{Name: "d"}, nodes); err == nil {
		t.Error("a selector with an unknown operator: no error")
	}
}
