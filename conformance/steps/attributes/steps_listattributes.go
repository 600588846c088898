package attributes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/cpuset"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/report"
)

// listAttributeSteps hold the driver's own list attribute (KEP-5491) of the
// NUMA nodes a device is close to (declaration
// deviceKinds[].numaNodesAttribute) to the node's sysfs, and let the
// scheduler select and constrain the driver's devices by it.
func (w *world) listAttributeSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^each of the driver's devices carries the NUMA nodes the node's sysfs puts close to it as its NUMA nodes list$`, Fn: w.devicesCarrySysfsNUMANodes},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting 1 device whose NUMA nodes list includes (the|another) NUMA node (?:than )?the node's sysfs gives it$`, Fn: w.claimNUMANodesIncludes, Needs: kit.NeedsOneWhole},
		{Pattern: `^the device allocated to the claim "([^"]+)" has that NUMA node in its NUMA nodes list and in the node's sysfs$`, Fn: w.claimDeviceNUMANodesInclude},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting 2 devices with the same NUMA nodes list$`, Fn: w.claimMatchingNUMANodes},
		{Pattern: `^the devices allocated to the claim "([^"]+)" have NUMA nodes lists with a node in common, in the node's sysfs too$`, Fn: w.claimDevicesShareNUMANode},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting 1 device more than the node's sysfs has NUMA nodes, with pairwise different NUMA nodes lists$`, Fn: w.claimDistinctNUMANodes},
	}
}

// numaNodesAttr lets a step go on when the driver claims listTypeAttributes,
// declares its NUMA nodes list attribute and the kit reads the node's sysfs;
// it returns the attribute's domain and name.
func (w *world) numaNodesAttr(ctx context.Context) (context.Context, string, string, error) {
	ctx, err := w.RequireCapability(ctx, declaration.CapabilityListTypeAttributes)
	if err != nil {
		return ctx, "", "", err
	}
	if w.Driver.NUMANodesAttribute == "" {
		ctx, err = kit.Skip(ctx, report.NotDeclaredPrefix+"the driver declares no list attribute of the NUMA nodes close to a device (deviceKinds[].numaNodesAttribute, or --numa-nodes-attribute)")
		return ctx, "", "", err
	}
	if w.Cfg.NodeSysfsRoot == "" {
		ctx, err = kit.Skip(ctx, kit.SysfsSkipReason)
		return ctx, "", "", err
	}
	domain, name := observe.SplitAttribute(w.Driver.DriverName, w.Driver.NUMANodesAttribute)
	return ctx, domain, name, nil
}

// sysfsCloseNUMANodes are the NUMA nodes the node's sysfs puts close to
// the PCI function addr, by the rule of the list form of
// resource.kubernetes.io/numaNode (KEP-6072): the function's numa_node
// first, then, ascending, the nodes at the minimum distance from it in
// /sys/devices/system/node/node<N>/distance (other than itself) whose
// socket (physical_package_id of their first CPU) is the same, or unknown.
// Nil when numa_node is -1; only the own node when the distance row is
// missing.
func (w *world) sysfsCloseNUMANodes(addr string) ([]int64, error) {
	own, err := w.sysfsNUMANode(addr)
	if err != nil || own < 0 {
		return nil, err
	}
	out := []int64{own}
	b, err := os.ReadFile(filepath.Join(w.Cfg.NodeSysfsRoot, "devices", "system", "node", fmt.Sprintf("node%d", own), "distance"))
	if err != nil {
		return out, nil // no SLIT distances: the own node only
	}
	var distances []int64
	for _, f := range strings.Fields(string(b)) {
		d, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parse the distances of NUMA node %d in the node's sysfs: %w", own, err)
		}
		distances = append(distances, d)
	}
	if int(own) >= len(distances) {
		return out, nil
	}
	minimum := int64(-1)
	for i, d := range distances {
		if int64(i) != own && (minimum < 0 || d < minimum) {
			minimum = d
		}
	}
	socket, known := w.sysfsNUMASocket(own)
	for i, d := range distances {
		if int64(i) == own || d != minimum {
			continue
		}
		if s, ok := w.sysfsNUMASocket(int64(i)); known && ok && s != socket {
			continue
		}
		out = append(out, int64(i))
	}
	return out, nil
}

// sysfsNUMASocket is the socket of a NUMA node's first CPU in the node's
// sysfs; false when sysfs does not tell (a node without CPUs).
func (w *world) sysfsNUMASocket(node int64) (int64, bool) {
	b, err := os.ReadFile(filepath.Join(w.Cfg.NodeSysfsRoot, "devices", "system", "node", fmt.Sprintf("node%d", node), "cpulist"))
	if err != nil {
		return 0, false
	}
	cpus, err := cpuset.Parse(strings.TrimSpace(string(b)))
	if err != nil || cpus.Size() == 0 {
		return 0, false
	}
	b, err = os.ReadFile(filepath.Join(w.Cfg.NodeSysfsRoot, "devices", "system", "cpu", fmt.Sprintf("cpu%d", cpus.List()[0]), "topology", "physical_package_id"))
	if err != nil {
		return 0, false
	}
	s, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return s, err == nil
}

// devicePCIFunction is the device's pciBusID.
func devicePCIFunction(d kit.PublishedDevice) (string, error) {
	a, ok := d.Attributes[kit.PciBusIDAttribute]
	if !ok || a.StringValue == nil {
		return "", fmt.Errorf("device %s publishes no %s, so the kit cannot find its PCI function in the node's sysfs", d.ID(), kit.PciBusIDAttribute)
	}
	return *a.StringValue, nil
}

// devicesCarrySysfsNUMANodes checks every device of the driver: its NUMA
// nodes list is exactly sysfsCloseNUMANodes of its PCI function, and
// absent where sysfs gives the function no NUMA node.
func (w *world) devicesCarrySysfsNUMANodes(ctx context.Context) (context.Context, error) {
	ctx, domain, name, err := w.numaNodesAttr(ctx)
	if err != nil {
		return ctx, err
	}
	attr := resourceapi.QualifiedName(domain + "/" + name)
	devices, err := w.CurrentDevices(ctx)
	if err != nil {
		return ctx, err
	}
	if len(devices) == 0 {
		return ctx, fmt.Errorf("driver %s publishes no devices", w.Driver.DriverName)
	}
	var bad []string
	for _, d := range devices {
		addr, err := devicePCIFunction(d)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		want, err := w.sysfsCloseNUMANodes(addr)
		if err != nil {
			return ctx, err
		}
		a, ok := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, string(attr))
		switch {
		case want == nil && ok:
			bad = append(bad, fmt.Sprintf("device %s publishes %s %s, but the node's sysfs puts its PCI function %s on no NUMA node", d.ID(), attr, observe.AttributeString(a), addr))
		case want == nil:
		case !ok:
			bad = append(bad, fmt.Sprintf("device %s publishes no %s, the node's sysfs puts NUMA nodes %v close to its PCI function %s", d.ID(), attr, want, addr))
		case len(a.IntValues) == 0:
			bad = append(bad, fmt.Sprintf("device %s publishes %s as %s, not an int list", d.ID(), attr, observe.AttributeString(a)))
		case !slices.Equal(a.IntValues, want):
			bad = append(bad, fmt.Sprintf("device %s publishes %s %v, the node's sysfs puts NUMA nodes %v close to its PCI function %s", d.ID(), attr, a.IntValues, want, addr))
		}
	}
	return ctx, kit.Findings(bad)
}

// numaNodesSelector is the CEL selector of devices whose list attribute
// domain/name includes node. No optional chaining: on .?name.orValue(…)
// the API server estimates includes() as unboundedly costly and rejects
// the selector; has() keeps devices without the attribute out.
func numaNodesSelector(domain, name string, node int64) string {
	expr := fmt.Sprintf("device.attributes[%s].%s", strconv.Quote(domain), name)
	return fmt.Sprintf("has(%s) && %s.includes(%d)", expr, expr, node)
}

// claimNUMANodesIncludes asks for the scenario's leased device with a
// selector that its NUMA nodes list includes the NUMA node the node's sysfs
// gives its PCI function (relation "the"), or a node sysfs does not put
// close to it ("another"; the claim then stays unallocated).
func (w *world) claimNUMANodesIncludes(ctx context.Context, claim, relation string) (context.Context, error) {
	ctx, domain, name, err := w.numaNodesAttr(ctx)
	if err != nil {
		return ctx, err
	}
	if w.Lease == nil || len(w.Lease.Units) == 0 || len(w.Lease.Units[0].Whole) == 0 {
		return ctx, fmt.Errorf("claim %s: the scenario leased no whole device to select by its NUMA nodes", claim)
	}
	d := w.Lease.Units[0].Whole[0]
	a, ok := d.Attributes[kit.PciBusIDAttribute]
	if !ok || a.StringValue == nil {
		return kit.Skip(ctx, fmt.Sprintf("device %s publishes no %s, so the kit cannot find its PCI function in the node's sysfs", d.ID(), kit.PciBusIDAttribute))
	}
	near, err := w.sysfsCloseNUMANodes(*a.StringValue)
	if err != nil {
		return ctx, err
	}
	if near == nil {
		return kit.Skip(ctx, fmt.Sprintf("the node's sysfs puts device %s (PCI function %s) on no NUMA node", d.ID(), *a.StringValue))
	}
	want := near[0]
	if relation == "another" {
		want = slices.Max(near) + 1
	}
	if w.numaNodes == nil {
		w.numaNodes = map[string]int64{}
	}
	w.numaNodes[claim] = want
	return ctx, w.CreateClaim(ctx, kit.NewClaim(claim, kit.ClaimSpec(w.Driver.DeviceClass(), 1, numaNodesSelector(domain, name, want))))
}

// claimPublishedDevices are the driver's published devices allocated to the
// claim, in result order.
func (w *world) claimPublishedDevices(ctx context.Context, claim string) ([]kit.PublishedDevice, error) {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get claim %s: %w", claim, err)
	}
	results := kit.DriverResults(c, w.Driver.DriverName)
	devices, err := w.CurrentDevices(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]kit.PublishedDevice{}
	for _, d := range devices {
		byID[d.ID()] = d
	}
	var out []kit.PublishedDevice
	for _, r := range results {
		d, ok := byID[r.Pool+"/"+r.Device]
		if !ok {
			return nil, fmt.Errorf("claim %s: allocated device %s/%s is not in the driver's ResourceSlices", claim, r.Pool, r.Device)
		}
		out = append(out, d)
	}
	return out, nil
}

// claimDeviceNUMANodesInclude checks that the claim's one device publishes
// the selected NUMA node in its list and that the node's sysfs puts that
// node close to the device's PCI function.
func (w *world) claimDeviceNUMANodesInclude(ctx context.Context, claim string) error {
	want, ok := w.numaNodes[claim]
	if !ok {
		return fmt.Errorf("claim %s selected no NUMA node (a step \"a ResourceClaim ... whose NUMA nodes list includes ...\" must come first)", claim)
	}
	devices, err := w.claimPublishedDevices(ctx, claim)
	if err != nil {
		return err
	}
	if len(devices) != 1 {
		return fmt.Errorf("claim %s is allocated %d devices of driver %s, expected 1", claim, len(devices), w.Driver.DriverName)
	}
	d := devices[0]
	a, _ := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, w.Driver.NUMANodesAttribute)
	if !slices.Contains(a.IntValues, want) {
		return fmt.Errorf("claim %s selected NUMA node %d and got device %s, whose %s is %s", claim, want, d.ID(), w.Driver.NUMANodesAttribute, observe.AttributeString(a))
	}
	addr, err := devicePCIFunction(d)
	if err != nil {
		return err
	}
	near, err := w.sysfsCloseNUMANodes(addr)
	if err != nil {
		return err
	}
	if !slices.Contains(near, want) {
		return fmt.Errorf("claim %s selected NUMA node %d and got device %s, whose PCI function %s the node's sysfs puts close to NUMA nodes %v only", claim, want, d.ID(), addr, near)
	}
	return nil
}

// claimMatchingNUMANodes asks for 2 devices (the scenario's leased ones)
// with matchAttribute over the NUMA nodes list: lists with a node in
// common.
func (w *world) claimMatchingNUMANodes(ctx context.Context, claim string) (context.Context, error) {
	ctx, domain, name, err := w.numaNodesAttr(ctx)
	if err != nil {
		return ctx, err
	}
	spec := kit.WithMatchAttribute(kit.ClaimSpec(w.Driver.DeviceClass(), 2), domain+"/"+name)
	return ctx, w.CreateClaim(ctx, kit.NewClaim(claim, spec))
}

// claimDevicesShareNUMANode checks that the claim's devices publish NUMA
// nodes lists with a node in common, and that their PCI functions' close
// NUMA nodes in the node's sysfs have it in common too.
func (w *world) claimDevicesShareNUMANode(ctx context.Context, claim string) error {
	devices, err := w.claimPublishedDevices(ctx, claim)
	if err != nil {
		return err
	}
	if len(devices) < 2 {
		return fmt.Errorf("claim %s is allocated %d devices of driver %s, expected at least 2", claim, len(devices), w.Driver.DriverName)
	}
	var published, truth []int64
	var ids []string
	for i, d := range devices {
		ids = append(ids, d.ID())
		a, _ := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, w.Driver.NUMANodesAttribute)
		addr, err := devicePCIFunction(d)
		if err != nil {
			return err
		}
		near, err := w.sysfsCloseNUMANodes(addr)
		if err != nil {
			return err
		}
		if i == 0 {
			published, truth = slices.Clone(a.IntValues), near
			continue
		}
		published = slices.DeleteFunc(published, func(n int64) bool { return !slices.Contains(a.IntValues, n) })
		truth = slices.DeleteFunc(truth, func(n int64) bool { return !slices.Contains(near, n) })
	}
	switch {
	case len(published) == 0:
		return fmt.Errorf("claim %s is allocated devices %s whose %s lists have no NUMA node in common", claim, strings.Join(ids, ", "), w.Driver.NUMANodesAttribute)
	case len(truth) == 0:
		return fmt.Errorf("claim %s is allocated devices %s whose PCI functions the node's sysfs puts close to no common NUMA node (their lists share %v)", claim, strings.Join(ids, ", "), published)
	}
	return nil
}

// claimDistinctNUMANodes asks for one device more than the node's sysfs
// has NUMA nodes with distinctAttribute over the NUMA nodes list: the lists
// must be pairwise disjoint non-empty sets of the node's NUMA nodes, and no
// more such sets exist than nodes, so no allocation can satisfy it. Skipped
// when the driver's class has no more devices than that.
func (w *world) claimDistinctNUMANodes(ctx context.Context, claim string) (context.Context, error) {
	ctx, domain, name, err := w.numaNodesAttr(ctx)
	if err != nil {
		return ctx, err
	}
	nodes, err := filepath.Glob(filepath.Join(w.Cfg.NodeSysfsRoot, "devices", "system", "node", "node[0-9]*"))
	if err != nil {
		return ctx, fmt.Errorf("list the NUMA nodes in the node's sysfs: %w", err)
	}
	n := int64(len(nodes)) + 1
	devices, err := w.ClassDevices(ctx, w.Driver.DeviceClass())
	if err != nil {
		return ctx, err
	}
	if int64(len(devices)) < n || n > resourceapi.AllocationResultsMaxSize {
		return kit.Skip(ctx, fmt.Sprintf("DeviceClass %s selects %d devices, not the %d a claim needs to be more than the node's %d NUMA nodes", w.Driver.DeviceClass(), len(devices), n, len(nodes)))
	}
	full := resourceapi.FullyQualifiedName(domain + "/" + name)
	spec := kit.ClaimSpec(w.Driver.DeviceClass(), n)
	spec.Devices.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: &full}}
	return ctx, w.CreateClaim(ctx, kit.NewClaim(claim, spec))
}
