package kit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"drakit.dev/drakit/oracle/allocator/live"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

// The oracle backs the scheduler's decisions with the reference allocator
// (drakit.dev/drakit/oracle/allocator/live): "stays unschedulable" is
// proven by a complete search that finds no allocation on any node, and
// every allocation the scheduler made is judged by the independent checker.
// The state is the cluster's own, captured when the step runs; the
// scenario's device lease keeps other scenarios off its devices meanwhile.

// oracleAttachment names the note with the oracle's verdict.
const oracleAttachment = "oracle"

// allocatorFeatures are the allocator features the cluster's gates enable.
func (s *Suite) allocatorFeatures(ctx context.Context) (scenario.Features, error) {
	s.gatesOnce.Do(func() {
		if s.gates == nil {
			s.gates, s.gatesErr = live.EnabledGates(ctx, s.Kube)
		}
	})
	if s.gatesErr != nil {
		return scenario.Features{}, fmt.Errorf("the reference allocator needs the cluster's feature gates: %w", s.gatesErr)
	}
	return live.FeaturesFromGates(s.gates), nil
}

// podClaimRefs are the ResourceClaims of a pod's claim entries.
func (w *World) podClaimRefs(ctx context.Context, pod string) ([]types.NamespacedName, error) {
	got, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get pod %s: %w", pod, err)
	}
	var out []types.NamespacedName
	for _, pc := range got.Spec.ResourceClaims {
		name, err := w.PodClaimName(ctx, pod, pc.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, types.NamespacedName{Namespace: w.Ns, Name: name})
	}
	return out, nil
}

// proveUnschedulable checks, for a pod the scheduler leaves pending, that
// the reference allocator finds no allocation of its unallocated claims on
// any node either. An allocation it finds is a finding that names it, with
// the captured scenario written to the artifacts for `drakit allocate -f`.
func (w *World) ProveUnschedulable(ctx context.Context, pod string) (context.Context, error) {
	features, err := w.allocatorFeatures(ctx)
	if err != nil {
		return ctx, err
	}
	refs, err := w.podClaimRefs(ctx, pod)
	if err != nil {
		return ctx, err
	}
	var pending []types.NamespacedName
	var allocated []*resourceapi.ResourceClaim
	for _, r := range refs {
		c, err := w.Kube.ResourceV1().ResourceClaims(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			return ctx, fmt.Errorf("get claim %s: %w", r, err)
		}
		if c.Status.Allocation == nil {
			pending = append(pending, r)
		} else {
			allocated = append(allocated, c)
		}
	}
	if len(pending) == 0 {
		return ctx, fmt.Errorf("pod %s is pending, but all its claims are allocated: nothing keeps it from being scheduled", pod)
	}
	ex, err := live.ExplainClaims(ctx, w.Kube, features, "", pending)
	if err != nil {
		return ctx, err
	}
	var notes []string
	for _, v := range ex.Nodes {
		// The pod's allocated claims bind it to their allocations' nodes
		// (a multi-node device's claim shared with pods elsewhere).
		if bound, err := w.boundElsewhere(ctx, allocated, v.Node); err != nil {
			return ctx, err
		} else if v.Fits && bound != "" {
			notes = append(notes, fmt.Sprintf("node %s: its claims would fit, but %s", v.Node, bound))
			continue
		}
		if v.Fits {
			return ctx, fmt.Errorf("the scheduler leaves pod %s unschedulable, but the reference allocator allocates its claims on node %s: %s (the cluster's state is in %s; replay it with drakit allocate -f)",
				pod, v.Node, strings.Join(v.Devices, "; "), w.saveScenario(v.Scenario))
		}
		notes = append(notes, fmt.Sprintf("node %s: %s", v.Node, v.Why))
	}
	return godog.Attach(ctx, godog.Attachment{FileName: oracleAttachment, MediaType: "text/plain",
		Body: []byte("the reference allocator finds no allocation either: " + strings.Join(notes, "; "))}), nil
}

// boundElsewhere says which of the allocated claims keeps a pod off node:
// one whose allocation's node selector does not match it; "" for none.
func (w *World) boundElsewhere(ctx context.Context, allocated []*resourceapi.ResourceClaim, node string) (string, error) {
	var n *corev1.Node
	for _, c := range allocated {
		sel := c.Status.Allocation.NodeSelector
		if sel == nil {
			continue
		}
		if n == nil {
			got, err := w.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return "", fmt.Errorf("get node %s: %w", node, err)
			}
			n = got
		}
		if ok, err := nodeaffinity.NewLazyErrorNodeSelector(sel).Match(n); err != nil || !ok {
			return fmt.Sprintf("the pod's claim %s is allocated for other nodes", c.Name), nil
		}
	}
	return "", nil
}

// checkAllocation judges the scheduler's allocation of a claim with the
// reference checker against the rest of the cluster's allocations.
func (w *World) checkAllocation(ctx context.Context, claim string, node string) error {
	features, err := w.allocatorFeatures(ctx)
	if err != nil {
		return err
	}
	ref := types.NamespacedName{Namespace: w.Ns, Name: claim}
	s, err := live.Capture(ctx, w.Kube, features, node, []types.NamespacedName{ref})
	if err != nil {
		return err
	}
	if err := live.Check(ctx, s); err != nil {
		return fmt.Errorf("claim %s: the scheduler's allocation breaks the rules the reference checker knows (the cluster's state is in %s): %w", claim, w.saveScenario(s), err)
	}
	return nil
}

// saveScenario writes the captured scenario to the artifacts, with the
// judged claims as they were before the scheduler allocated them, so that
// `drakit allocate -f` replays it; it returns the path, or "(not saved: …)".
func (w *World) saveScenario(s *scenario.Scenario) string {
	replay := *s
	replay.Claims = make([]*resourceapi.ResourceClaim, len(s.Claims))
	for i, c := range s.Claims {
		c = c.DeepCopy()
		c.Status = resourceapi.ResourceClaimStatus{}
		replay.Claims[i] = c
	}
	data, err := scenario.Marshal(&replay)
	if err != nil {
		return fmt.Sprintf("(not saved: %v)", err)
	}
	path := filepath.Join(w.artifacts, diagnosticsDir, fmt.Sprintf("oracle-%s.yaml", w.Ns))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Sprintf("(not saved: %v)", err)
	}
	return path
}

// allocationNode is a node the claim's allocation is for: the node of a pod
// it is reserved for, else the first schedulable node its node selector
// matches (all of them when it has none).
func (w *World) AllocationNode(ctx context.Context, c *resourceapi.ResourceClaim) (string, error) {
	for _, r := range c.Status.ReservedFor {
		if r.Resource != "pods" || r.APIGroup != "" {
			continue
		}
		if pod, err := w.Kube.CoreV1().Pods(c.Namespace).Get(ctx, r.Name, metav1.GetOptions{}); err == nil && pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
	}
	nodes, err := w.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list nodes: %w", err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if c.Status.Allocation.NodeSelector == nil {
			return n.Name, nil
		}
		ok, err := nodeaffinity.NewLazyErrorNodeSelector(c.Status.Allocation.NodeSelector).Match(n)
		if err == nil && ok {
			return n.Name, nil
		}
	}
	return "", fmt.Errorf("claim %s: no node matches the node selector of its allocation", c.Name)
}
