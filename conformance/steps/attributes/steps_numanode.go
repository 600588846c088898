package attributes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/kit"
)

// numaNodeSteps check the standard attribute resource.kubernetes.io/numaNode
// (KEP-6072) of the driver's devices against the node's sysfs: the claims
// select a NUMA node that the sysfs, not the driver, names.
func (w *world) numaNodeSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^a ResourceClaim "([^"]+)" requesting 1 device on (the|another) NUMA node (?:than )?the node's sysfs gives it$`, Fn: w.claimSysfsNUMANode, Needs: kit.NeedsOneWhole},
		{Pattern: `^the device allocated to the claim "([^"]+)" is on that NUMA node in the node's sysfs$`, Fn: w.claimDeviceOnSysfsNUMANode},
	}
}

// sysfsNUMANode reads the numa_node of the PCI function at addr below the
// node's sysfs: -1 when the kernel knows none.
func (w *world) sysfsNUMANode(addr string) (int64, error) {
	path := filepath.Join(w.Cfg.NodeSysfsRoot, "bus", "pci", "devices", addr, "numa_node")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read the node's sysfs numa_node of PCI function %s: %w", addr, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return n, nil
}

// claimSysfsNUMANode asks for 1 device, the one the scenario leased, with a
// selector on the numaNode that the node's sysfs gives the device's PCI
// function (relation "the") or on another one ("another"). The claim is
// allocated exactly when the driver publishes the sysfs value.
func (w *world) claimSysfsNUMANode(ctx context.Context, name, relation string) (context.Context, error) {
	ctx, err := w.RequireCapability(ctx, declaration.CapabilityNUMANodeAttribute)
	if err != nil {
		return ctx, err
	}
	if w.Cfg.NodeSysfsRoot == "" {
		return kit.Skip(ctx, kit.SysfsSkipReason)
	}
	if w.Lease == nil || len(w.Lease.Units) == 0 || len(w.Lease.Units[0].Whole) == 0 {
		return ctx, fmt.Errorf("claim %s: the scenario leased no whole device to select by NUMA node", name)
	}
	d := w.Lease.Units[0].Whole[0]
	a, ok := d.Attributes[kit.PciBusIDAttribute]
	if !ok || a.StringValue == nil {
		return kit.Skip(ctx, fmt.Sprintf("device %s publishes no %s, so the kit cannot find its PCI function in the node's sysfs", d.ID(), kit.PciBusIDAttribute))
	}
	node, err := w.sysfsNUMANode(*a.StringValue)
	if err != nil {
		return ctx, err
	}
	if node < 0 {
		return kit.Skip(ctx, fmt.Sprintf("the node's sysfs puts device %s (PCI function %s) on no NUMA node", d.ID(), *a.StringValue))
	}
	want := node
	if relation == "another" {
		want = node + 1
	}
	if w.numaNodes == nil {
		w.numaNodes = map[string]int64{}
	}
	w.numaNodes[name] = want
	// includes() would take a list too, but needs the alpha list-type
	// attributes; an int numaNode is what every 1.37 cluster knows.
	sel := fmt.Sprintf(`device.attributes["resource.kubernetes.io"].?numaNode.orValue(-1) == %d`, want)
	return ctx, w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(w.Driver.DeviceClass(), 1, sel)))
}

// claimDeviceOnSysfsNUMANode checks that the device allocated to the claim
// is, by its pciBusID, a PCI function that the node's sysfs puts on the
// NUMA node the claim selected.
func (w *world) claimDeviceOnSysfsNUMANode(ctx context.Context, claim string) error {
	want, ok := w.numaNodes[claim]
	if !ok {
		return fmt.Errorf("claim %s selected no NUMA node (a step \"a ResourceClaim ... on the NUMA node the node's sysfs gives it\" must come first)", claim)
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	results := kit.DriverResults(c, w.Driver.DriverName)
	if len(results) != 1 {
		return fmt.Errorf("claim %s is allocated %s of driver %s, expected 1 device", claim, kit.ResultIDs(results), w.Driver.DriverName)
	}
	devices, err := w.CurrentDevices(ctx)
	if err != nil {
		return err
	}
	id := results[0].Pool + "/" + results[0].Device
	for _, d := range devices {
		if d.ID() != id {
			continue
		}
		a, ok := d.Attributes[kit.PciBusIDAttribute]
		if !ok || a.StringValue == nil {
			return fmt.Errorf("claim %s: device %s publishes no %s", claim, id, kit.PciBusIDAttribute)
		}
		got, err := w.sysfsNUMANode(*a.StringValue)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("claim %s selected NUMA node %d and got device %s, whose PCI function %s the node's sysfs puts on NUMA node %d", claim, want, id, *a.StringValue, got)
		}
		return nil
	}
	return fmt.Errorf("claim %s: allocated device %s is not in the driver's ResourceSlices", claim, id)
}
