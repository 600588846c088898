package live

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/oracle/allocator/scenario"
)

// NodeVerdict is what the reference allocator says of one node.
type NodeVerdict struct {
	Node string
	// Fits says that the claims can be allocated on the node; Devices then
	// lists what each claim would get.
	Fits    bool
	Devices []string
	// Why says what stands in the way when they do not fit: the request,
	// selector, constraint or counter (the allocator's explanation), or
	// the error of an invalid pool.
	Why string
	// Scenario is the captured state of the node.
	Scenario *scenario.Scenario
}

// Explanation says why claims are not allocated.
type Explanation struct {
	// Claims are the claims explained; Allocated those of them the
	// scheduler allocated already (nothing to explain).
	Claims, Allocated []types.NamespacedName
	// Nodes are the verdicts per schedulable node (or the node asked for).
	Nodes []NodeVerdict
}

// ExplainClaims explains why claims are not allocated, node by node: on
// node when it is set, else on every Ready, schedulable node. The claims
// are allocated together, as the claims of one pod are.
func ExplainClaims(ctx context.Context, kube kubernetes.Interface, features scenario.Features, node string, claims []types.NamespacedName) (*Explanation, error) {
	ex := &Explanation{}
	for _, ref := range claims {
		c, err := kube.ResourceV1().ResourceClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("get claim %s: %w", ref, err)
		}
		if c.Status.Allocation != nil {
			ex.Allocated = append(ex.Allocated, ref)
			continue
		}
		ex.Claims = append(ex.Claims, ref)
	}
	if len(ex.Claims) == 0 {
		return ex, nil
	}
	var nodes []string
	if node != "" {
		nodes = []string{node}
	} else {
		list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		for i := range list.Items {
			if Schedulable(&list.Items[i]) {
				nodes = append(nodes, list.Items[i].Name)
			}
		}
		if len(nodes) == 0 {
			return nil, fmt.Errorf("explain %s: the cluster has no Ready, schedulable node", joinRefs(ex.Claims))
		}
	}
	for _, n := range nodes {
		s, err := Capture(ctx, kube, features, n, ex.Claims)
		if err != nil {
			return nil, err
		}
		v := NodeVerdict{Node: n, Scenario: s}
		results, why, err := Allocate(ctx, s)
		switch {
		case err != nil:
			v.Why = err.Error()
		case results == nil:
			v.Why = why
		default:
			v.Fits = true
			for i, r := range results {
				for _, d := range r.Devices.Results {
					v.Devices = append(v.Devices, fmt.Sprintf("claim %s request %s: %s/%s/%s", s.Claims[i].Name, d.Request, d.Driver, d.Pool, d.Device))
				}
			}
		}
		ex.Nodes = append(ex.Nodes, v)
	}
	return ex, nil
}

// PodClaims are the ResourceClaims of a pod's claim entries; an entry whose
// claim the resourceclaim controller has not generated yet is an error.
func PodClaims(ctx context.Context, kube kubernetes.Interface, pod types.NamespacedName) ([]types.NamespacedName, error) {
	p, err := kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get pod %s: %w", pod, err)
	}
	var out []types.NamespacedName
	for _, pc := range p.Spec.ResourceClaims {
		name := ""
		if pc.ResourceClaimName != nil {
			name = *pc.ResourceClaimName
		}
		for _, st := range p.Status.ResourceClaimStatuses {
			if st.Name == pc.Name && st.ResourceClaimName != nil {
				name = *st.ResourceClaimName
			}
		}
		if name == "" {
			return nil, fmt.Errorf("pod %s: claim entry %s has no ResourceClaim yet (the resourceclaim controller generates it from its template)", pod, pc.Name)
		}
		out = append(out, types.NamespacedName{Namespace: pod.Namespace, Name: name})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pod %s has no ResourceClaims", pod)
	}
	return out, nil
}

// Schedulable says whether the scheduler may place pods on the node: Ready
// and not cordoned.
func Schedulable(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// String is the explanation for people.
func (ex *Explanation) String() string {
	var b strings.Builder
	for _, ref := range ex.Allocated {
		fmt.Fprintf(&b, "claim %s is allocated: nothing to explain\n", ref)
	}
	if len(ex.Claims) == 0 {
		return b.String()
	}
	fits := 0
	for _, v := range ex.Nodes {
		if v.Fits {
			fits++
		}
	}
	fmt.Fprintf(&b, "%s: not allocated; the reference allocator finds an allocation on %d of %d nodes\n", joinRefs(ex.Claims), fits, len(ex.Nodes))
	for _, v := range ex.Nodes {
		if v.Fits {
			fmt.Fprintf(&b, "node %s: fits — %s\n  (the scheduler may not have tried again since the devices became free, or it timed out: compare with its events)\n",
				v.Node, strings.Join(v.Devices, "; "))
			continue
		}
		fmt.Fprintf(&b, "node %s: does not fit — %s\n", v.Node, v.Why)
	}
	return b.String()
}

func joinRefs(refs []types.NamespacedName) string {
	s := make([]string, len(refs))
	for i, r := range refs {
		s[i] = "claim " + r.String()
	}
	return strings.Join(s, ", ")
}
