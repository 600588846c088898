package tpudriver

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/internal/tpuhw"
	"drakit.dev/drakit/reference/pluginharness"
)

// checkpointVersion is the only checkpoint format this driver reads.
const checkpointVersion = "tpu.drakit.dev/checkpoint/v1"

// preparedChips is the checkpointed record of one prepared device: the
// chips of this host it gives the container and, for a sub-slice, the TPU
// runtime environment computed at prepare (the sub-slice's hosts).
type preparedChips struct {
	pluginharness.PreparedDevice
	Chips []int    `json:"chips"`
	Env   []string `json:"env,omitempty"`
}

type preparedClaim = pluginharness.Claim[preparedChips]

// node is the driver's side of the kubelet plugin (pluginharness.Driver).
type node struct {
	name, driver, hostRoot string
	h                      *host
	client                 kubernetes.Interface
}

var (
	_ pluginharness.Driver[preparedChips] = (*node)(nil)
	_ pluginharness.PoolAdmitter          = (*node)(nil)
)

func harnessConfig(cfg Config, n *node) pluginharness.Config {
	return pluginharness.Config{DriverName: cfg.DriverName, NodeName: cfg.NodeName, CDIDir: cfg.CDIDir,
		CheckpointDir: cfg.StateDir, CheckpointVersion: checkpointVersion, Checksum: true}
}

// Discover returns the node's pool of chips.
func (n *node) Discover(context.Context, map[string]preparedClaim) (resourceslice.DriverResources, error) {
	return nodeResources(n.driver, n.name, n.h), nil
}

// Admit admits every chip of the node.
func (n *node) Admit(string, bool) error { return nil }

// AdmitPool admits a sub-slice of the host's slice that holds chips of
// this host (pluginharness.PoolAdmitter).
func (n *node) AdmitPool(pool, device string) error {
	_, err := n.subslice(pool, device)
	return err
}

func (n *node) subslice(pool, device string) (tpuhw.Placement, error) {
	env := n.h.env
	if env.SliceName == "" || pool != SubslicePool(env.SliceName) {
		return tpuhw.Placement{}, fmt.Errorf("not the sub-slice pool of this host's slice (%q)", SubslicePool(env.SliceName))
	}
	p, err := ParseSubsliceDevice(device)
	if err != nil {
		return tpuhw.Placement{}, err
	}
	if !env.Slice.Topology.Contains(p.Origin) || len(env.Slice.Topology.Placements(p.Shape)) == 0 {
		return tpuhw.Placement{}, fmt.Errorf("sub-slice %s does not fit topology %s", p, env.Slice.Topology)
	}
	if !slices.Contains(env.Slice.HostsOf(p), env.WorkerID) {
		return tpuhw.Placement{}, fmt.Errorf("sub-slice %s has no chip on this host (worker %d)", p, env.WorkerID)
	}
	return p, nil
}

// Prepare records each device's chips on this host and, for a sub-slice,
// the runtime environment, which names the sub-slice's hosts (read from the
// node pools' workerID attributes).
func (n *node) Prepare(ctx context.Context, _ string, claim *preparedClaim, _ func() error) error {
	for i := range claim.Devices {
		d := &claim.Devices[i]
		if d.Pool == n.name {
			idx, ok := parseChipDevice(d.Device)
			if !ok || idx >= len(n.h.chips) {
				return fmt.Errorf("device %s is not a chip of this node", d.Device)
			}
			d.Chips = []int{idx}
			continue
		}
		p, err := n.subslice(d.Pool, d.Device)
		if err != nil {
			return fmt.Errorf("device %s of pool %s: %w", d.Device, d.Pool, err)
		}
		workers := subsliceWorkers(n.h.env.Slice, p)
		nodes, err := n.workerNodes(ctx)
		if err != nil {
			return err
		}
		var hostnames []string
		for _, w := range workers {
			name, ok := nodes[w]
			if !ok {
				return fmt.Errorf("sub-slice %s: no node publishes worker %d of slice %s", p, w, n.h.env.SliceName)
			}
			hostnames = append(hostnames, name)
		}
		d.Chips = n.h.env.Slice.ChipsOn(p, n.h.env.WorkerID)
		d.Env = subsliceEnv(n.h.env, p, slices.Index(workers, n.h.env.WorkerID), hostnames, d.Chips)
	}
	return nil
}

// Unprepare has nothing to undo: prepare changes no hardware.
func (n *node) Unprepare(context.Context, string, preparedClaim) error { return nil }

// subsliceWorkers are the hosts of p in the sub-slice's own order: by host
// box, x, then y, then z from p's origin (wrapping), the TPU_WORKER_ID
// order.
func subsliceWorkers(g tpuhw.Slice, p tpuhw.Placement) []int {
	var out []int
	for _, c := range p.Coords(g.Topology) {
		if w, _ := g.Locate(c); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// subsliceEnv is what a TPU runtime reads on one host of sub-slice p.
func subsliceEnv(env tpuhw.TPUEnv, p tpuhw.Placement, worker int, hostnames []string, chips []int) []string {
	cb := env.Slice.ChipBounds
	hostBounds := tpuhw.Bounds{X: p.Shape.X / cb.X, Y: p.Shape.Y / cb.Y, Z: p.Shape.Z / cb.Z}
	return []string{
		tpuhw.EnvTopology + "=" + p.Shape.String(),
		tpuhw.EnvWorkerID + "=" + strconv.Itoa(worker),
		tpuhw.EnvWorkerHostnames + "=" + strings.Join(hostnames, ","),
		tpuhw.EnvChipsPerHostBounds + "=" + tpuhw.CommaBounds(cb),
		tpuhw.EnvHostBounds + "=" + tpuhw.CommaBounds(hostBounds),
		tpuhw.EnvVisibleChips + "=" + joinInts(chips),
		tpuhw.EnvAcceleratorType + "=" + fmt.Sprintf("%s-%d", env.Generation, p.Shape.Chips()),
		tpuhw.EnvSkipMetadataQuery + "=true",
	}
}

// chipsEnv is the environment of a claim of node-local chips: the visible
// chips and, when the claim holds every chip of the host, the host as a
// one-host slice of its chip bounds.
func chipsEnv(env tpuhw.TPUEnv, node string, chips []int) []string {
	cb := env.Slice.ChipBounds
	out := []string{
		tpuhw.EnvVisibleChips + "=" + joinInts(chips),
		tpuhw.EnvChipsPerHostBounds + "=" + tpuhw.CommaBounds(cb),
		tpuhw.EnvSkipMetadataQuery + "=true",
	}
	if len(chips) == cb.Chips() {
		out = append(out,
			tpuhw.EnvTopology+"="+cb.String(),
			tpuhw.EnvHostBounds+"=1,1,1",
			tpuhw.EnvWorkerID+"=0",
			tpuhw.EnvWorkerHostnames+"="+node,
			tpuhw.EnvAcceleratorType+"="+fmt.Sprintf("%s-%d", env.Generation, cb.Chips()))
	}
	return out
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// workerNodes maps the worker ids of this host's slice to the nodes whose
// pools publish them.
func (n *node) workerNodes(ctx context.Context) (map[int]string, error) {
	list, err := n.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(resourceapi.ResourceSliceSelectorDriver, n.driver).String()})
	if err != nil {
		return nil, fmt.Errorf("list ResourceSlices of %s: %w", n.driver, err)
	}
	if info, ok := sliceInfos(n.driver, list.Items)[n.h.env.SliceName]; ok {
		return info.nodes, nil
	}
	return map[int]string{}, nil
}

// Edits are the claim's CDI edits: per device its chips' nodes
// (/dev/accel<N>, and /dev/vfio/<group> with /dev/vfio/vfio for vfio-bound
// generations), and as the spec's own edits the runtime environment: a
// sub-slice's, or the node-local chips'.
func (n *node) Edits(_ context.Context, _ string, claim preparedClaim) (pluginharness.Edits, error) {
	var e pluginharness.Edits
	var chips []int
	seen := map[string]bool{}
	for _, d := range claim.Devices {
		if seen[d.Device] {
			continue
		}
		seen[d.Device] = true
		if len(d.Env) > 0 && len(e.Claim.Env) == 0 {
			e.Claim.Env = slices.Clone(d.Env)
		}
		if len(d.Env) == 0 {
			chips = append(chips, d.Chips...)
		}
		e.Devices = append(e.Devices, pluginharness.DeviceEdits{Device: d.Device, Edits: n.chipNodes(d.Chips)})
	}
	if len(e.Claim.Env) == 0 && len(chips) > 0 {
		slices.Sort(chips)
		e.Claim.Env = chipsEnv(n.h.env, n.name, chips)
	}
	return e, nil
}

func (n *node) chipNodes(chips []int) cdispec.ContainerEdits {
	var edits cdispec.ContainerEdits
	vfio := false
	for _, i := range chips {
		c := n.h.chips[i]
		edits.DeviceNodes = append(edits.DeviceNodes, &cdispec.DeviceNode{
			Path: tpuhw.AccelPath(i), HostPath: filepath.Join(n.hostRoot, tpuhw.AccelPath(i))})
		if c.Generation.VFIO {
			vfio = true
			edits.DeviceNodes = append(edits.DeviceNodes, &cdispec.DeviceNode{
				Path: tpuhw.VFIOGroupPath(c.IOMMUGroup), HostPath: filepath.Join(n.hostRoot, tpuhw.VFIOGroupPath(c.IOMMUGroup))})
		}
	}
	if vfio {
		edits.DeviceNodes = append(edits.DeviceNodes, &cdispec.DeviceNode{Path: "/dev/vfio/vfio", HostPath: filepath.Join(n.hostRoot, "dev/vfio/vfio")})
	}
	return edits
}
