package kit

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"
)

// Node selection of ResourceSlices and their devices (KEP-4815's
// perDeviceNodeSelection): the selections the validation scenarios submit
// and which nodes can use a device (steps_multihost.go).

// hostnameLabel is the label the kubelet gives its node.
const HostnameLabel = "kubernetes.io/hostname"

// missingNodeName names a node no cluster of the kit has.
const MissingNodeName = "drakit-no-such-node"

// sliceNodeSelections are the ResourceSlice node selections the validation
// scenarios submit, by the text that names them in the features, as edits
// of a test driver slice with one device d0 and nothing else set.
var SliceNodeSelections = map[string]func(s *resourceapi.ResourceSlice){
	"names no node": func(*resourceapi.ResourceSlice) {},
	"sets both allNodes and perDeviceNodeSelection": func(s *resourceapi.ResourceSlice) {
		s.Spec.AllNodes = ptr.To(true)
		s.Spec.PerDeviceNodeSelection = ptr.To(true)
		s.Spec.Devices[0].AllNodes = ptr.To(true)
	},
	"sets perDeviceNodeSelection to false": func(s *resourceapi.ResourceSlice) {
		s.Spec.PerDeviceNodeSelection = ptr.To(false)
	},
	"is per device but a device names no node": func(s *resourceapi.ResourceSlice) {
		s.Spec.PerDeviceNodeSelection = ptr.To(true)
	},
	"is per device but a device sets both nodeName and allNodes": func(s *resourceapi.ResourceSlice) {
		s.Spec.PerDeviceNodeSelection = ptr.To(true)
		s.Spec.Devices[0].NodeName = ptr.To(MissingNodeName)
		s.Spec.Devices[0].AllNodes = ptr.To(true)
	},
	"is per device but a device sets allNodes to false": func(s *resourceapi.ResourceSlice) {
		s.Spec.PerDeviceNodeSelection = ptr.To(true)
		s.Spec.Devices[0].AllNodes = ptr.To(false)
	},
	"is per device but a device has an empty nodeName": func(s *resourceapi.ResourceSlice) {
		s.Spec.PerDeviceNodeSelection = ptr.To(true)
		s.Spec.Devices[0].NodeName = ptr.To("")
	},
	"is allNodes and a device sets a nodeName": func(s *resourceapi.ResourceSlice) {
		s.Spec.AllNodes = ptr.To(true)
		s.Spec.Devices[0].NodeName = ptr.To(MissingNodeName)
	},
	"is a nodeName and a device sets a nodeSelector": func(s *resourceapi.ResourceSlice) {
		s.Spec.NodeName = ptr.To(MissingNodeName)
		s.Spec.Devices[0].NodeSelector = NodeNameSelector(MissingNodeName)
	},
}

// nodeNameSelector selects the node by its name.
func NodeNameSelector(node string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
}

// hostnameSelector selects nodes by the kubelet's hostname label.
func HostnameSelector(hostname string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: HostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}},
	}}}
}

// multiNodeDevice is a device of the driver that several nodes can use,
// with the pods the scenario runs on them.
type MultiNodeDevice struct {
	Device PublishedDevice
	// class is the DeviceClass the kit found it in, which claims name.
	Class string
	// subslice says that class is the declared torus's sub-slice class:
	// what pods see is judged by each host's ground truth.
	Subslice bool
	// identity is its identity attribute's value, which claims pin.
	Identity string
	// hosts are the names of all the nodes that can use it, sorted; nodes
	// the first of them that the scenario runs pods on.
	Hosts, Nodes []string
	// pods are the scenario's pods on those nodes, by node.
	Pods map[string]string
}

// deviceNodes are the names of the nodes a device of the slice is
// available on: the device's own node selection under
// perDeviceNodeSelection, else the slice's.
func DeviceNodes(s resourceapi.ResourceSlice, d resourceapi.Device, nodes []corev1.Node) ([]string, error) {
	name, selector, all := s.Spec.NodeName, s.Spec.NodeSelector, ptr.Deref(s.Spec.AllNodes, false)
	if ptr.Deref(s.Spec.PerDeviceNodeSelection, false) {
		name, selector, all = d.NodeName, d.NodeSelector, ptr.Deref(d.AllNodes, false)
	}
	var match func(*corev1.Node) bool
	switch {
	case name != nil:
		match = func(n *corev1.Node) bool { return n.Name == *name }
	case selector != nil:
		sel, err := nodeaffinity.NewNodeSelector(selector)
		if err != nil {
			return nil, fmt.Errorf("slice %s: device %s: node selector: %w", s.Name, d.Name, err)
		}
		match = sel.Match
	case all:
		match = func(*corev1.Node) bool { return true }
	default:
		return nil, nil
	}
	var out []string
	for i := range nodes {
		if match(&nodes[i]) {
			out = append(out, nodes[i].Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// nodePods are the multi-node device's pods, by node, in node order.
func (m *MultiNodeDevice) NodePods() ([]string, []string) {
	var nodes, pods []string
	for _, n := range m.Nodes {
		if p, ok := m.Pods[n]; ok {
			nodes, pods = append(nodes, n), append(pods, p)
		}
	}
	return nodes, pods
}

// NodeName is Config.NodeName, else the cluster's only node.
func (w *World) NodeName(ctx context.Context) (string, error) {
	if w.Cfg.NodeName != "" {
		return w.Cfg.NodeName, nil
	}
	nodes, err := w.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list nodes: %w", err)
	}
	if len(nodes.Items) != 1 {
		return "", fmt.Errorf("the cluster has %d nodes: say which one the kit reads with --node-name", len(nodes.Items))
	}
	return nodes.Items[0].Name, nil
}
