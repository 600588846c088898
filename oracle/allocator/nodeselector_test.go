package allocator

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// checkSameAsNodeAffinity fails when parseNodeSelector and nodeaffinity
// disagree on sel: one rejects it and the other does not, or they match
// node differently.
func checkSameAsNodeAffinity(t *testing.T, sel *v1.NodeSelector, node *v1.Node) {
	t.Helper()
	want, wantErr := nodeaffinity.NewNodeSelector(sel)
	got, gotErr := parseNodeSelector(sel)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("selector %v: nodeaffinity error %v, parseNodeSelector error %v", sel, wantErr, gotErr)
	}
	if wantErr != nil {
		return
	}
	if w, g := want.Match(node), got.Match(node); w != g {
		t.Fatalf("selector %v on node %s %v: nodeaffinity %v, parseNodeSelector %v", sel, node.Name, node.Labels, w, g)
	}
}

func hostSelector(key string, fields bool, values ...string) *v1.NodeSelector {
	req := []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}}
	if fields {
		return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: req}}}
	}
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: req}}}
}

func TestSimpleNodeSelector(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gb200-001", Labels: map[string]string{v1.LabelHostname: "gb200-001", "rack": ""}}}
	for _, sel := range []*v1.NodeSelector{
		hostSelector("metadata.name", true, "gb200-001"),
		hostSelector("metadata.name", true, "gb200-002"),
		hostSelector("metadata.name", true, "gb200-001", "gb200-002"), // matchFields takes one value: an error
		hostSelector(v1.LabelHostname, false, "gb200-000", "gb200-001"),
		hostSelector(v1.LabelHostname, false, "gb200-000"),
		hostSelector("rack", false, ""),
		hostSelector("rack", false, "a"),
		hostSelector("missing", false, "gb200-001"),
		hostSelector("Bad Key", false, "x"),
		hostSelector(v1.LabelHostname, false, "-bad"),
		hostSelector(v1.LabelHostname, false, strings.Repeat("a", 64)),
		hostSelector(v1.LabelHostname, false),
		{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "rack", Operator: v1.NodeSelectorOpExists}}}}},
		{NodeSelectorTerms: []v1.NodeSelectorTerm{{}, {}}},
	} {
		checkSameAsNodeAffinity(t, sel, node)
	}
	if m, ok := simpleSelector(hostSelector(v1.LabelHostname, false, "a", "b")); !ok || !m.Match(&v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.LabelHostname: "b"}}}) {
		t.Error("a hostname In selector does not take the simple path")
	}
}

// FuzzSimpleNodeSelector compares parseNodeSelector with nodeaffinity on
// one-requirement selectors, the shapes simpleSelector takes.
func FuzzSimpleNodeSelector(f *testing.F) {
	f.Add("kubernetes.io/hostname", "a", "b", "a", "a", false)
	f.Add("metadata.name", "a", "", "a", "", true)
	f.Add("k", "-x", "y.", "y", "y", false)
	f.Fuzz(func(t *testing.T, key, v1s, v2s, nodeName, label string, fields bool) {
		values := []string{v1s}
		if v2s != "" {
			values = append(values, v2s)
		}
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{key: label}}}
		checkSameAsNodeAffinity(t, hostSelector(key, fields, values...), node)
	})
}
