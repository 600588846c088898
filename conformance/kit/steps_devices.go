package kit

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
func (w *World) deviceSteps() []StepDef {
	return []StepDef{
		{Pattern: `^pod "([^"]+)" sees exactly the devices allocated to its claims$`, Fn: w.PodSeesAllocatedDevices},
		{Pattern: `^pod "([^"]+)" sees the same devices as pod "([^"]+)"$`, Fn: w.podsSeeSameDevices},
		{Pattern: `^pods "([^"]+)" and "([^"]+)" see different devices$`, Fn: w.podsSeeDifferentDevices},
	}
}

// checksAttachment names the note that says which checks a "sees exactly"
// step ran.
const checksAttachment = "checks"

// seenDevices is what the kit found a pod's container to see, kept for
// comparisons with other pods after the pod is gone.
type seenDevices struct {
	// nodeChecked says that the kit read the node: prepared and cdi hold
	// what it found there.
	NodeChecked bool
	// prepared are the devices the driver prepared for the pod's claims
	// (pool/device), sorted, as the kubelet recorded them.
	Prepared []string
	// cdi are the node's CDI devices whose every edit the container shows,
	// sorted.
	cdi []string
	// shown are the driver's devices on the node (pool/device) that the
	// container shows by what the driver declares it injects
	// (observe.ShownDevices), sorted.
	Shown []string
	// nvml are the GPU and MIG device UUIDs NVML showed, sorted; nil
	// without the nvml observer or when NVML could not be loaded.
	nvml []string
}

// podWithDevices returns a running pod that has devices of the driver
// allocated; comparing an empty allocation would prove nothing.
func (w *World) PodWithDevices(name string) (*PodRecord, error) {
	p, err := w.RunningPod(name)
	if err != nil {
		return nil, err
	}
	if len(p.Devices) == 0 {
		return nil, fmt.Errorf("pod %s: no devices of driver %s are allocated to its claims, so there is nothing to compare", name, w.Driver.DriverName)
	}
	return p, nil
}

// containerObservers are the observers the driver declares that judge from
// inside the container, without the node's files.
func (w *World) containerObservers() []string {
	var out []string
	if w.Driver.DeviceEnvPrefix != "" || w.Driver.DeviceEnvName != "" {
		out = append(out, string(declaration.ObserverEnv))
	}
	for _, o := range []declaration.Observer{declaration.ObserverDeviceNodes, declaration.ObserverMounts, declaration.ObserverNVML} {
		if w.Driver.observes(o) {
			out = append(out, string(o))
		}
	}
	return out
}

// cannotObserveReason is the skip reason when neither the node nor the
// container can be observed: the driver cannot be certified, it is not a
// scenario that does not apply.
func cannotObserveReason(nodeReason string) string {
	return "could not certify what the container sees: " + nodeReason +
		", and the driver declares no observer that judges from inside the container (env, deviceNodes, mounts or nvml)"
}

// podSeesAllocatedDevices is KEP-4381's promise for a pod: where the kit
// can read the node, the DRA contract (the driver prepared exactly the
// allocated devices, the container shows exactly their CDI edits and none
// of another device's); then every observer the driver declares that
// judges from inside the container: its per-device environment variables,
// device nodes and mounts, and NVML with the NVIDIA device nodes. Without
// the node those decide; with neither, or with an NVML that could not be
// loaded and no finding otherwise, the step skips as could-not-certify. It
// attaches which checks ran.
func (w *World) PodSeesAllocatedDevices(ctx context.Context, name string) (context.Context, error) {
	nodeReason := w.ContractAccess()
	inContainer := w.containerObservers()
	if nodeReason != "" && len(inContainer) == 0 {
		return Skip(ctx, cannotObserveReason(nodeReason))
	}
	p, err := w.PodWithDevices(name)
	if err != nil {
		return ctx, err
	}
	var (
		bad    []string
		checks []string
		c      contractResult
		seen   = &seenDevices{}
	)
	if nodeReason == "" {
		if c, err = w.contract(p); err != nil {
			return ctx, err
		}
		bad = c.findings
		seen.NodeChecked, seen.Prepared, seen.cdi = true, c.prepared, c.shown
		checks = append(checks, fmt.Sprintf("the DRA contract: the driver prepared %s, the container shows exactly their CDI edits (%d CDI devices) and none of the node's %d other CDI devices",
			strings.Join(c.prepared, ", "), len(c.cdiIDs), c.others))
	} else {
		checks = append(checks, "not checked: the DRA contract on the node ("+nodeReason+"); the container-side observers decide")
	}
	node, err := w.nodeDevices(ctx, p)
	if err != nil {
		return ctx, err
	}
	in := w.Driver.Injected()
	if w.Driver.DeviceEnvPrefix != "" || w.Driver.DeviceEnvName != "" {
		bad = append(bad, w.envFindings(name, p, node, c.peerEnv)...)
		checks = append(checks, "env: one variable per allocated device with its value, none for another device of the node")
	}
	mine, others := w.wholeKind(p.Devices, node)
	if w.Driver.observes(declaration.ObserverDeviceNodes) {
		bad = append(bad, observe.CheckDeclaredDeviceNodes(name, in, mine, others, *p.Report)...)
		checks = append(checks, "deviceNodes: the declared device nodes of every allocated device, of their type and numbers, none of another device of the node")
	}
	if w.Driver.observes(declaration.ObserverMounts) {
		bad = append(bad, observe.CheckDeclaredMounts(name, in, mine, others, *p.Report)...)
		checks = append(checks, "mounts: the declared mounts of every allocated device, read-only where declared, none of another device of the node")
	}
	var unjudged string
	if w.Driver.observes(declaration.ObserverNVML) {
		if unjudged = observe.NVMLUnavailable(name, *p.Report); unjudged == "" {
			bad = append(bad, w.nvmlFindings(name, p, c, nodeReason == "")...)
			seen.nvml = nvmlIDs(*p.Report)
			checks = append(checks, "nvml: NVML in the container lists exactly the allocated GPUs and partitions, the NVIDIA device nodes are exactly theirs (and their CDI edits', with the node)")
		} else {
			checks = append(checks, "not judged: nvml ("+unjudged+")")
		}
	}
	seen.Shown = observe.ShownDevices(in, w.Driver.observes(declaration.ObserverNVML), node, *p.Report)
	p.Seen = seen
	ctx = godog.Attach(ctx, godog.Attachment{FileName: checksAttachment, MediaType: "text/plain", Body: []byte(strings.Join(checks, "\n"))})
	if len(bad) == 0 && unjudged != "" {
		return Skip(ctx, "could not certify what the container sees through NVML: "+unjudged)
	}
	return ctx, Findings(bad)
}

// nodeDevices are the driver's devices on the nodes of the devices
// allocated to the pod, allocated or not, with their identity.
func (w *World) nodeDevices(ctx context.Context, p *PodRecord) ([]observe.Device, error) {
	all, err := w.CurrentDevices(ctx)
	if err != nil {
		return nil, err
	}
	nodes := map[string]bool{}
	for _, a := range p.Devices {
		if d, ok := FindDevice(all, a.Pool, a.Device); ok {
			nodes[d.Node] = true
		}
	}
	var out []observe.Device
	for _, d := range all {
		if !nodes[d.Node] {
			continue
		}
		od := observe.Device{Pool: d.Pool, Device: d.Name, Attributes: d.Attributes, Capacity: d.Capacity}
		if a, ok := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, w.Driver.UUIDAttribute); ok && a.StringValue != nil {
			od.UUID = *a.StringValue
		}
		out = append(out, od)
	}
	return out, nil
}

// wholeKind narrows the allocated and the node's devices to those the
// declared device nodes and mounts describe, the whole-device kind's: not
// partitions, and among the others not the parents of allocated
// partitions, whose nodes the container rightly has.
func (w *World) wholeKind(allocated, node []observe.Device) (mine, others []observe.Device) {
	names := w.Driver.PartitionNames()
	isPartition := func(d observe.Device) (observe.Partition, bool) {
		if w.Driver.PartitionClassName == "" {
			return observe.Partition{}, false
		}
		return names.Partition(d.Attributes)
	}
	parents := map[string]bool{}
	for _, d := range allocated {
		if part, ok := isPartition(d); ok {
			parents[part.ParentUUID] = true
			continue
		}
		mine = append(mine, d)
	}
	for _, d := range node {
		if _, ok := isPartition(d); ok || (d.UUID != "" && parents[d.UUID]) {
			continue
		}
		others = append(others, d)
	}
	return mine, others
}

// envFindings compares the container's per-device variables with the
// allocated devices and the other devices of their nodes. Variables that
// other drivers' CDI devices of the pod's claims set (peerEnv, known with
// the node) are theirs, whatever they look like.
func (w *World) envFindings(name string, p *PodRecord, node []observe.Device, peerEnv []string) []string {
	report := *p.Report
	if len(peerEnv) > 0 {
		report.Env = maps.Clone(report.Env)
		for _, n := range peerEnv {
			delete(report.Env, n)
		}
	}
	env := w.Driver.deviceEnv()
	if env == nil {
		return observe.CheckEnv(name, w.Driver.DeviceEnvPrefix, p.Devices, report)
	}
	return observe.CheckEnvPattern(name, w.Driver.DriverName, w.Driver.UUIDAttribute, env, p.Devices, node, report)
}

// nvidiaNodePrefix starts the paths of NVIDIA device nodes in a container:
// /dev/nvidia<minor>, /dev/nvidiactl, /dev/nvidia-caps/…, /dev/nvidia-uvm.
const nvidiaNodePrefix = probe.DevPath + "/nvidia"

// nvmlFindings compares NVML in the container and its NVIDIA device nodes
// with the allocated GPUs and partitions and, with the node (withNode),
// the NVIDIA nodes with those the pod's CDI edits inject.
func (w *World) nvmlFindings(name string, p *PodRecord, c contractResult, withNode bool) []string {
	names := w.Driver.PartitionNames()
	partitions := false
	for _, d := range p.Devices {
		if _, ok := names.Partition(d.Attributes); ok && w.Driver.PartitionClassName != "" {
			partitions = true
		}
	}
	var bad []string
	if partitions {
		bad = append(bad, observe.CheckMIGNVML(name, names.PartitionNames, p.Devices, *p.Report)...)
		bad = append(bad, observe.CheckMIGDeviceNodes(name, *p.Report)...)
	} else {
		bad = append(bad, observe.CheckNVML(name, w.Driver.UUIDAttribute, p.Devices, *p.Report)...)
		bad = append(bad, observe.CheckDeviceNodes(name, p.Devices, *p.Report)...)
	}
	if !withNode {
		return bad
	}
	return append(bad, observe.CheckNodesUnder(name, nvidiaNodePrefix, c.edits, observe.ObservedOf(*p.Report))...)
}

// seenBy returns what the kit found pod name to see.
func (w *World) seenBy(name string) (*seenDevices, error) {
	p, err := w.RunningPod(name)
	if err != nil {
		return nil, err
	}
	if p.Seen == nil {
		return nil, fmt.Errorf("pod %s: the kit has not compared its devices yet (a step \"pod %q sees exactly the devices allocated to its claims\" must come first)", name, name)
	}
	return p.Seen, nil
}

// podsSeeSameDevices compares what each pod's own container showed: the
// driver's devices it shows by what the driver declares it injects, with
// the node the CDI devices whose edits it shows, with the nvml observer
// the GPUs and partitions NVML lists. The other pod may be gone; what it
// saw is remembered. A pod that shows nothing of the driver by any of
// these leaves nothing to compare, which is a finding, not a pass.
func (w *World) podsSeeSameDevices(name, other string) error {
	a, err := w.seenBy(name)
	if err != nil {
		return err
	}
	b, err := w.seenBy(other)
	if err != nil {
		return err
	}
	var bad []string
	for _, s := range []struct {
		Pod  string
		seen *seenDevices
	}{{name, a}, {other, b}} {
		if len(s.seen.Shown) == 0 && len(s.seen.cdi) == 0 && len(s.seen.nvml) == 0 {
			bad = append(bad, fmt.Sprintf("pod %s shows no device of driver %s by any observer, so there is nothing to compare", s.Pod, w.Driver.DriverName))
		}
	}
	if !slices.Equal(a.Shown, b.Shown) {
		bad = append(bad, fmt.Sprintf("pod %s shows devices %s of driver %s, pod %s showed %s", name, List(a.Shown), w.Driver.DriverName, other, List(b.Shown)))
	}
	if a.NodeChecked && b.NodeChecked && !slices.Equal(a.cdi, b.cdi) {
		bad = append(bad, fmt.Sprintf("pod %s shows the CDI edits of devices %s, pod %s showed those of %s", name, List(a.cdi), other, List(b.cdi)))
	}
	if a.nvml != nil && b.nvml != nil && !slices.Equal(a.nvml, b.nvml) {
		bad = append(bad, fmt.Sprintf("pod %s sees %s through NVML, pod %s saw %s", name, List(a.nvml), other, List(b.nvml)))
	}
	return Findings(bad)
}

// podsSeeDifferentDevices: the driver prepared no device for both pods and,
// with the nvml observer, NVML showed them no common partition.
func (w *World) podsSeeDifferentDevices(a, b string) error {
	sa, err := w.seenBy(a)
	if err != nil {
		return err
	}
	sb, err := w.seenBy(b)
	if err != nil {
		return err
	}
	var bad []string
	if both := sets.New(sa.Prepared...).Intersection(sets.New(sb.Prepared...)); both.Len() > 0 {
		bad = append(bad, fmt.Sprintf("the driver prepared %s for both pods %s and %s", List(sets.List(both)), a, b))
	}
	if sa.nvml != nil {
		ma, mb := migIDs(sa.nvml), migIDs(sb.nvml)
		if both := ma.Intersection(mb); both.Len() > 0 {
			bad = append(bad, fmt.Sprintf("pods %s and %s both see MIG devices %s through NVML", a, b, List(sets.List(both))))
		}
	}
	return Findings(bad)
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

func List(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// devicesOf lists the IDs of devices, sorted.
func devicesOf(prepared map[string]bool) []string { return slices.Sorted(maps.Keys(prepared)) }
