package allocator

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// nodeMatcher decides whether a node is selected.
type nodeMatcher interface{ Match(node *v1.Node) bool }

// namesMatcher selects the nodes named in names by one label (or, with an
// empty label, by metadata.name).
type namesMatcher struct {
	label string
	names map[string]bool
}

func (m namesMatcher) Match(node *v1.Node) bool {
	if node == nil {
		return false
	}
	if m.label == "" {
		return m.names[node.Name]
	}
	v, ok := node.Labels[m.label]
	return ok && m.names[v]
}

// simpleSelector returns a matcher for the node selectors drivers publish
// most, without nodeaffinity's parsing (which validates each label value
// with a regular expression, per selector): one term with either one
// matchFields requirement metadata.name In [one name], or one
// matchExpressions requirement <label> In [values]. It gives the same
// answer as nodeaffinity.NewNodeSelector(sel).Match for these shapes, and
// ok=false for any other shape or an invalid key or value, which are then
// left to nodeaffinity (and its errors).
func simpleSelector(sel *v1.NodeSelector) (nodeMatcher, bool) {
	if len(sel.NodeSelectorTerms) != 1 {
		return nil, false
	}
	term := &sel.NodeSelectorTerms[0]
	var req *v1.NodeSelectorRequirement
	label := ""
	switch {
	case len(term.MatchFields) == 1 && len(term.MatchExpressions) == 0:
		req = &term.MatchFields[0]
		if req.Key != "metadata.name" || len(req.Values) != 1 {
			return nil, false
		}
	case len(term.MatchExpressions) == 1 && len(term.MatchFields) == 0:
		req = &term.MatchExpressions[0]
		if len(req.Values) == 0 || len(validation.IsQualifiedName(req.Key)) > 0 {
			return nil, false
		}
		label = req.Key
	default:
		return nil, false
	}
	if req.Operator != v1.NodeSelectorOpIn {
		return nil, false
	}
	m := namesMatcher{label: label, names: make(map[string]bool, len(req.Values))}
	for _, v := range req.Values {
		if !isLabelValue(v) {
			return nil, false
		}
		m.names[v] = true
	}
	return m, true
}

// isLabelValue is validation.IsValidLabelValue without a regular
// expression: at most 63 characters, empty or alphanumeric at both ends
// with '-', '_' and '.' between.
func isLabelValue(v string) bool {
	if len(v) > validation.LabelValueMaxLength {
		return false
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	for i := 0; i < len(v); i++ {
		c := v[i]
		if alnum(c) {
			continue
		}
		if i == 0 || i == len(v)-1 || !slices.Contains([]byte("-_."), c) {
			return false
		}
	}
	return true
}

// parseNodeSelector is simpleSelector where it applies, else
// nodeaffinity.NewNodeSelector.
func parseNodeSelector(sel *v1.NodeSelector) (nodeMatcher, error) {
	if m, ok := simpleSelector(sel); ok {
		return m, nil
	}
	s, err := nodeaffinity.NewNodeSelector(sel)
	if err != nil {
		return nil, err
	}
	return s, nil
}
