package fabric

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/oracle/allocator/instances"
	"drakit.dev/drakit/oracle/allocator/scenario"
	"drakit.dev/drakit/reference/simulate"
	"drakit.dev/drakit/reference/tpudriver"
)

// Profile is the cluster profile the cases run on.
const Profile = "scale-1000"

// Device classes of the fabric cases: the contract's, with the GPU class
// limited to GPUs (the GPU driver also publishes IMEX channels).
const (
	gpuDriver     = "gpu.drakit.dev"
	GPUClass      = "gpu.drakit.dev"
	IMEXClass     = "imex.gpu.drakit.dev"
	TPUChipClass  = "tpu.drakit.dev"
	SubsliceClass = "subslice.tpu.drakit.dev"
)

// Case is one allocation problem on the fabric inventory: its claim
// on one node (Scenario), and the nodes a scheduler's Filter pass tries it
// on (AllNodes: every node of the cluster, in order).
type Case struct {
	// Name says what is claimed ("gb200-clique", …).
	Name string
	// Description says what the claim is, for the report.
	Description string
	// Scenario allocates the claim on one node where it fits.
	Scenario *scenario.Scenario
	// Nodes are every node of the cluster, for a Filter pass; Feasible is
	// how many of them the claim fits on.
	Nodes    []*v1.Node
	Feasible int
}

// Cases builds the fabric cases on the scale-1000 cluster profile's
// published inventory (simulate.ClusterSlices: 1,000 nodes' GPU and TPU
// pools, 53 IMEX channel pools, 2 sub-slice pools):
//
//   - gb200-clique: the GB200 form of "8 GPUs aligned on one clique": a
//     GB200 tray has 4 GPUs, so a multi-node job's pod claims one IMEX
//     channel of its clique and the node's 4 GPUs, matchAttribute
//     gpu.drakit.dev/nvlinkClique over both requests (the channel carries
//     the clique as the GPUs do). Fits on the 954 GB200 nodes.
//   - tpu-4x4x4: one sub-slice device of shape 4x4x4 (the whole torus).
//     Fits on the 32 TPU hosts.
//   - tpu-4x4x4-fragmented: torus-a has one 2x2x2 sub-slice allocated (its
//     two hosts' counters are used), and the claim asks for the 4x4x4 sub-slice and
//     the host's 4 chips, matchAttribute tpu.drakit.dev/slice over both.
//     Fits only on torus-b's 16 hosts; on torus-a's the counters rule the
//     4x4x4 out.
func Cases(ctx context.Context) ([]Case, error) {
	c, err := simulate.LoadCluster(Profile)
	if err != nil {
		return nil, err
	}
	slices, err := simulate.ClusterSlices(ctx, c, gpuDriver)
	if err != nil {
		return nil, fmt.Errorf("build the slices of %s: %w", Profile, err)
	}
	nodes := make([]*v1.Node, len(c.Nodes))
	for i, n := range c.Nodes {
		nodes[i] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{"kubernetes.io/hostname": n.Name}}}
	}
	base := func(name, node string) *scenario.Scenario {
		return &scenario.Scenario{
			APIVersion:  scenario.APIVersion,
			Kind:        scenario.Kind,
			Name:        name,
			Satisfiable: ptr.To(true),
			Features:    instances.SchedulerFeatures(),
			Node:        &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"kubernetes.io/hostname": node}}},
			DeviceClasses: []*resourceapi.DeviceClass{
				class(GPUClass, `device.driver == "gpu.drakit.dev" && device.attributes["gpu.drakit.dev"].type == "gpu"`),
				class(IMEXClass, `device.driver == "gpu.drakit.dev" && device.attributes["gpu.drakit.dev"].type == "imex-channel"`),
				class(TPUChipClass, `device.driver == "tpu.drakit.dev" && device.attributes["tpu.drakit.dev"].type == "chip"`),
				class(SubsliceClass, `device.driver == "tpu.drakit.dev" && device.attributes["tpu.drakit.dev"].type == "subslice"`),
			},
			ResourceSlices: slices,
		}
	}

	clique := base("gb200-clique", "gb200-500")
	clique.Claims = []*resourceapi.ResourceClaim{fabricClaim("gb200-clique", "gpu.drakit.dev/nvlinkClique",
		request("imex", IMEXClass, 1), request("gpus", GPUClass, 4))}

	torus := base("tpu-4x4x4", "tpu-a-05")
	torus.Claims = []*resourceapi.ResourceClaim{fabricClaim("tpu-4x4x4", "",
		request("torus", SubsliceClass, 1, `"shape" in device.attributes["tpu.drakit.dev"] && device.attributes["tpu.drakit.dev"].shape == "4x4x4"`))}

	frag := base("tpu-4x4x4-fragmented", "tpu-b-05")
	frag.Claims = []*resourceapi.ResourceClaim{fabricClaim("tpu-4x4x4-fragmented", "tpu.drakit.dev/slice",
		request("torus", SubsliceClass, 1, `"shape" in device.attributes["tpu.drakit.dev"] && device.attributes["tpu.drakit.dev"].shape == "4x4x4"`),
		request("chips", TPUChipClass, 4))}
	held := fabricClaim("held", "")
	held.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "sub", Driver: simulate.TPUDriverName, Pool: tpudriver.SubslicePool("torus-a"), Device: "sub-2x2x2-2-2-1",
	}}}}
	held.Spec.Devices.Requests = []resourceapi.DeviceRequest{request("sub", SubsliceClass, 1)}
	frag.AllocatedClaims = []*resourceapi.ResourceClaim{held}

	return []Case{
		{Name: clique.Name, Scenario: clique, Nodes: nodes, Feasible: 954,
			Description: "1 IMEX channel + the node's 4 GB200 GPUs, matchAttribute gpu.drakit.dev/nvlinkClique"},
		{Name: torus.Name, Scenario: torus, Nodes: nodes, Feasible: 32,
			Description: "1 sub-slice device of shape 4x4x4"},
		{Name: frag.Name, Scenario: frag, Nodes: nodes, Feasible: 16,
			Description: "4x4x4 sub-slice + the host's 4 chips, matchAttribute tpu.drakit.dev/slice; torus-a fragmented by one allocated 2x2x2"},
	}, nil
}

func class(name, selector string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}}},
	}
}

// fabricClaim is a claim of requests; matchAttribute, when set, constrains
// all of them.
func fabricClaim(name, matchAttribute string, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: instances.Namespace, UID: types.UID("uid-" + name)},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: slices.Clone(requests)}},
	}
	if matchAttribute != "" {
		claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(matchAttribute))}}
	}
	return claim
}

func request(name, className string, count int64, selectors ...string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: className,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           count,
	}}
	for _, s := range selectors {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: s}})
	}
	return r
}
