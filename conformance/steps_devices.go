package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/cucumber/godog"
	"k8s.io/apimachinery/pkg/util/sets"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
)

// deviceSteps compare what a pod's container sees with the devices the API
// server says are allocated to the pod's claims: the DRA contract for every
// driver, and the observers the driver declares.
func (w *world) deviceSteps() []stepDef {
	return []stepDef{
		{`^pod "([^"]+)" sees exactly the devices allocated to its claims$`, w.podSeesAllocatedDevices, nil},
		{`^pod "([^"]+)" sees the same devices as pod "([^"]+)"$`, w.podsSeeSameDevices, nil},
		{`^pods "([^"]+)" and "([^"]+)" see different devices$`, w.podsSeeDifferentDevices, nil},
	}
}

// checksAttachment names the note that says which checks a "sees exactly"
// step ran.
const checksAttachment = "checks"

// seenDevices is what the kit found a pod's container to see, kept for
// comparisons with other pods after the pod is gone.
type seenDevices struct {
	// prepared are the devices the driver prepared for the pod's claims
	// (pool/device), sorted.
	prepared []string
	// nvml are the GPU and MIG device UUIDs NVML showed, sorted; nil
	// without the nvml observer.
	nvml []string
}

// podWithDevices returns a running pod that has devices of the driver
// allocated; comparing an empty allocation would prove nothing.
func (w *world) podWithDevices(name string) (*podRecord, error) {
	p, err := w.runningPod(name)
	if err != nil {
		return nil, err
	}
	if len(p.devices) == 0 {
		return nil, fmt.Errorf("pod %s: no devices of driver %s are allocated to its claims, so there is nothing to compare", name, w.cfg.DriverName)
	}
	return p, nil
}

// podSeesAllocatedDevices is KEP-4381's promise for a pod: the DRA contract
// (the driver prepared exactly the allocated devices, the container shows
// exactly their CDI edits and none of another device's), then every
// observer the driver declares: its per-device environment variables, and
// NVML with the NVIDIA device nodes. It attaches which checks ran.
func (w *world) podSeesAllocatedDevices(ctx context.Context, name string) (context.Context, error) {
	if reason := w.contractAccess(); reason != "" {
		return skip(ctx, reason)
	}
	p, err := w.podWithDevices(name)
	if err != nil {
		return ctx, err
	}
	c, err := w.contract(p)
	if err != nil {
		return ctx, err
	}
	bad := c.findings
	checks := []string{fmt.Sprintf("the DRA contract: the driver prepared %s, the container shows exactly their CDI edits (%d CDI devices) and none of the node's %d other CDI devices",
		strings.Join(c.prepared, ", "), len(c.cdiIDs), c.others)}
	seen := &seenDevices{prepared: c.prepared}
	if w.cfg.DeviceEnvPrefix != "" || w.cfg.DeviceEnvName != "" {
		envBad, err := w.envFindings(ctx, name, p, c.peerEnv)
		if err != nil {
			return ctx, err
		}
		bad = append(bad, envBad...)
		checks = append(checks, "env: one variable per allocated device with its value, none for another device of the node")
	}
	if w.cfg.observes(declaration.ObserverNVML) {
		bad = append(bad, w.nvmlFindings(name, p, c)...)
		seen.nvml = nvmlIDs(*p.report)
		checks = append(checks, "nvml: NVML in the container lists exactly the allocated GPUs and partitions, the NVIDIA device nodes are exactly theirs and their CDI edits'")
	}
	p.seen = seen
	ctx = godog.Attach(ctx, godog.Attachment{FileName: checksAttachment, MediaType: "text/plain", Body: []byte(strings.Join(checks, "\n"))})
	return ctx, findings(bad)
}

// envFindings compares the container's per-device variables with the
// allocated devices and the other devices of their nodes. Variables that
// other drivers' CDI devices of the pod's claims set (peerEnv) are theirs,
// whatever they look like.
func (w *world) envFindings(ctx context.Context, name string, p *podRecord, peerEnv []string) ([]string, error) {
	report := *p.report
	if len(peerEnv) > 0 {
		report.Env = maps.Clone(report.Env)
		for _, n := range peerEnv {
			delete(report.Env, n)
		}
	}
	env := w.cfg.deviceEnv()
	if env == nil {
		return observe.CheckEnv(name, w.cfg.DeviceEnvPrefix, p.devices, report), nil
	}
	all, err := w.currentDevices(ctx)
	if err != nil {
		return nil, err
	}
	nodes := map[string]bool{}
	for _, a := range p.devices {
		if d, ok := findDevice(all, a.Pool, a.Device); ok {
			nodes[d.Node] = true
		}
	}
	var node []observe.Device
	for _, d := range all {
		if nodes[d.Node] {
			node = append(node, observe.Device{Pool: d.Pool, Device: d.Name, Attributes: d.Attributes, Capacity: d.Capacity})
		}
	}
	return observe.CheckEnvPattern(name, w.cfg.DriverName, w.cfg.UUIDAttribute, env, p.devices, node, report), nil
}

// nvidiaNodePrefix starts the paths of NVIDIA device nodes in a container:
// /dev/nvidia<minor>, /dev/nvidiactl, /dev/nvidia-caps/…, /dev/nvidia-uvm.
const nvidiaNodePrefix = probe.DevPath + "/nvidia"

// nvmlFindings compares NVML in the container and its NVIDIA device nodes
// with the allocated GPUs and partitions, and the NVIDIA nodes with those
// the pod's CDI edits inject.
func (w *world) nvmlFindings(name string, p *podRecord, c contractResult) []string {
	names := w.cfg.partitionNames()
	partitions := false
	for _, d := range p.devices {
		if _, ok := names.Partition(d.Attributes); ok && w.cfg.PartitionClassName != "" {
			partitions = true
		}
	}
	var bad []string
	if partitions {
		bad = append(bad, observe.CheckMIGNVML(name, names.PartitionNames, p.devices, *p.report)...)
		bad = append(bad, observe.CheckMIGDeviceNodes(name, *p.report)...)
	} else {
		bad = append(bad, observe.CheckNVML(name, w.cfg.UUIDAttribute, p.devices, *p.report)...)
		bad = append(bad, observe.CheckDeviceNodes(name, p.devices, *p.report)...)
	}
	return append(bad, observe.CheckNodesUnder(name, nvidiaNodePrefix, c.edits, observe.ObservedOf(*p.report))...)
}

// seenBy returns what the kit found pod name to see.
func (w *world) seenBy(name string) (*seenDevices, error) {
	p, err := w.runningPod(name)
	if err != nil {
		return nil, err
	}
	if p.seen == nil {
		return nil, fmt.Errorf("pod %s: the kit has not compared its devices yet (a step \"pod %q sees exactly the devices allocated to its claims\" must come first)", name, name)
	}
	return p.seen, nil
}

// podsSeeSameDevices: the driver prepared the same devices for both pods
// and, with the nvml observer, NVML showed the same GPUs and partitions.
// The other pod may be gone; what it saw is remembered.
func (w *world) podsSeeSameDevices(name, other string) error {
	a, err := w.seenBy(name)
	if err != nil {
		return err
	}
	b, err := w.seenBy(other)
	if err != nil {
		return err
	}
	var bad []string
	if !slices.Equal(a.prepared, b.prepared) {
		bad = append(bad, fmt.Sprintf("the driver prepared %s for pod %s and %s for pod %s", list(a.prepared), name, list(b.prepared), other))
	}
	if a.nvml != nil && !slices.Equal(a.nvml, b.nvml) {
		bad = append(bad, fmt.Sprintf("pod %s sees %s through NVML, pod %s saw %s", name, list(a.nvml), other, list(b.nvml)))
	}
	return findings(bad)
}

// podsSeeDifferentDevices: the driver prepared no device for both pods and,
// with the nvml observer, NVML showed them no common partition.
func (w *world) podsSeeDifferentDevices(a, b string) error {
	sa, err := w.seenBy(a)
	if err != nil {
		return err
	}
	sb, err := w.seenBy(b)
	if err != nil {
		return err
	}
	var bad []string
	if both := sets.New(sa.prepared...).Intersection(sets.New(sb.prepared...)); both.Len() > 0 {
		bad = append(bad, fmt.Sprintf("the driver prepared %s for both pods %s and %s", list(sets.List(both)), a, b))
	}
	if sa.nvml != nil {
		ma, mb := migIDs(sa.nvml), migIDs(sb.nvml)
		if both := ma.Intersection(mb); both.Len() > 0 {
			bad = append(bad, fmt.Sprintf("pods %s and %s both see MIG devices %s through NVML", a, b, list(sets.List(both))))
		}
	}
	return findings(bad)
}

// nvmlIDs are the GPU UUIDs and "MIG:<uuid>" of the MIG devices NVML
// showed, sorted.
func nvmlIDs(r probe.Report) []string {
	out := []string{}
	for _, g := range r.NVML.GPUs {
		out = append(out, g.UUID)
		for _, m := range g.MIGDevices {
			out = append(out, "MIG:"+m.UUID)
		}
	}
	sort.Strings(out)
	return out
}

func migIDs(ids []string) sets.Set[string] {
	out := sets.New[string]()
	for _, id := range ids {
		if strings.HasPrefix(id, "MIG:") {
			out.Insert(id)
		}
	}
	return out
}

func list(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// devicesOf lists the IDs of devices, sorted.
func devicesOf(prepared map[string]bool) []string { return slices.Sorted(maps.Keys(prepared)) }
