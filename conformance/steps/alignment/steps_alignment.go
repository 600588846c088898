package alignment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/report"
)

// alignmentSteps claim a device of the driver together with a device of
// another driver (a PCIe root peer: the GPU beside a NIC) under one
// matchAttribute constraint on a standard attribute, and check the pair
// against the node's PCI topology.
func (w *world) alignmentSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the driver's devices have a PCIe root peer DeviceClass$`, Fn: w.hasPeerClass, Needs: kit.NeedsExclusive},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting 1 device and 1 device of the peer class with the same "([^"]+)"$`, Fn: w.claimWithPeer},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting 1 device of the peer class and 1 more device than any value of "([^"]+)" has, all with that value$`, Fn: w.claimUnalignable},
		{Pattern: `^the devices allocated to the claim "([^"]+)" sit below one PCIe root complex of the node$`, Fn: w.claimBelowOneRoot},
		{Pattern: `^the devices the driver allocated to the claim "([^"]+)" are PCI functions of the node$`, Fn: w.claimDevicesInSysfs},
	}
}

// peerRequest names the request for the peer driver's device.
const peerRequest = "peer"

func (w *world) peerClass() string {
	if len(w.Driver.PCIeRootPeerClasses) == 0 {
		return ""
	}
	return w.Driver.PCIeRootPeerClasses[0]
}

func (w *world) hasPeerClass(ctx context.Context) (context.Context, error) {
	peer := w.peerClass()
	if peer == "" {
		return kit.Skip(ctx, report.NotDeclaredPrefix+"the driver declares no DeviceClass of another driver whose devices share its PCIe roots (deviceKinds[].pcieRootPeers, or --pcie-root-peer-classes)")
	}
	if _, err := w.Kube.ResourceV1().DeviceClasses().Get(ctx, peer, metav1.GetOptions{}); err != nil {
		return ctx, fmt.Errorf("get the peer DeviceClass %s: %w", peer, err)
	}
	return ctx, nil
}

// peerSpec asks for n devices of the kit's class and one of the peer
// class, all with the same value of attr.
func (w *world) peerSpec(n int64, attr string) resourceapi.ResourceClaimSpec {
	domain, id := observe.SplitAttribute(w.Driver.DriverName, attr)
	spec := kit.ClaimSpec(w.Driver.DeviceClass(), n)
	spec.Devices.Requests = append(spec.Devices.Requests, kit.ExactRequest(peerRequest, w.peerClass(), 1))
	return kit.WithMatchAttribute(spec, domain+"/"+id)
}

func (w *world) claimWithPeer(ctx context.Context, name, attr string) error {
	return w.CreateClaim(ctx, kit.NewClaim(name, w.peerSpec(1, attr)))
}

// claimUnalignable asks for one more device of the kit's class than share
// any one value of attr, so that no peer device can have their value.
func (w *world) claimUnalignable(ctx context.Context, name, attr string) error {
	devices, err := w.ClassDevices(ctx, w.Driver.DeviceClass())
	if err != nil {
		return err
	}
	count := map[string]int{}
	most := 0
	for _, d := range devices {
		if a, ok := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, attr); ok {
			k := d.Node + "/" + attributeText(a)
			count[k]++
			most = max(most, count[k])
		}
	}
	if most == 0 {
		return fmt.Errorf("no device of DeviceClass %s publishes %s", w.Driver.DeviceClass(), attr)
	}
	return w.CreateClaim(ctx, kit.NewClaim(name, w.peerSpec(int64(most+1), attr)))
}

// attributeText is an attribute's value as text.
func attributeText(a resourceapi.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return *a.StringValue
	case a.IntValue != nil:
		return fmt.Sprint(*a.IntValue)
	case a.BoolValue != nil:
		return fmt.Sprint(*a.BoolValue)
	case a.VersionValue != nil:
		return *a.VersionValue
	}
	return ""
}

// claimBelowOneRoot resolves the PCI address every allocated device of the
// claim publishes (any driver's) in the node's sysfs: all must hang below
// one root complex, the one their pcieRoot attribute names.
func (w *world) claimBelowOneRoot(ctx context.Context, claim string) (context.Context, error) {
	if w.Cfg.NodeSysfsRoot == "" {
		return kit.Skip(ctx, kit.SysfsSkipReason)
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return ctx, fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil {
		return ctx, fmt.Errorf("claim %s is not allocated", claim)
	}
	slices, err := w.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ctx, fmt.Errorf("list ResourceSlices: %w", err)
	}
	var bad, seen []string
	roots := map[string]bool{}
	for _, r := range c.Status.Allocation.Devices.Results {
		attrs, ok := kit.SliceDevice(slices.Items, r)
		if !ok {
			bad = append(bad, fmt.Sprintf("device %s/%s/%s of claim %s is in no ResourceSlice", r.Driver, r.Pool, r.Device, claim))
			continue
		}
		busID, published := kit.StringAttr(attrs, kit.PciBusIDAttribute), kit.StringAttr(attrs, kit.PcieRootAttribute)
		if busID == "" {
			bad = append(bad, fmt.Sprintf("device %s/%s/%s publishes no %s to find it in the node's sysfs", r.Driver, r.Pool, r.Device, kit.PciBusIDAttribute))
			continue
		}
		root, err := pcieRootOf(w.Cfg.NodeSysfsRoot, busID)
		if err != nil {
			bad = append(bad, fmt.Sprintf("device %s/%s/%s: %v", r.Driver, r.Pool, r.Device, err))
			continue
		}
		roots[root] = true
		seen = append(seen, fmt.Sprintf("%s/%s/%s at %s below %s", r.Driver, r.Pool, r.Device, busID, root))
		if published != root {
			bad = append(bad, fmt.Sprintf("device %s/%s/%s publishes %s %q, the node's sysfs puts %s below %s", r.Driver, r.Pool, r.Device, kit.PcieRootAttribute, published, busID, root))
		}
	}
	if len(roots) > 1 {
		bad = append(bad, fmt.Sprintf("claim %s: its devices hang below %d root complexes: %s", claim, len(roots), strings.Join(seen, "; ")))
	}
	return kit.AttachText(ctx, "pcie roots", strings.Join(seen, "\n")), kit.Findings(bad)
}

// pcieRootOf is the root complex (pci<domain>:<bus>) a PCI function hangs
// below: the first element after "devices" of its sysfs path, as the
// kernel's /sys/bus/pci/devices/<address> link resolves.
func pcieRootOf(sysfs, busID string) (string, error) {
	link := filepath.Join(sysfs, "bus", "pci", "devices", busID)
	target, err := os.Readlink(link)
	if err != nil {
		return "", fmt.Errorf("the node's sysfs has no PCI function %s: %w", busID, err)
	}
	parts := strings.Split(filepath.ToSlash(target), "/")
	for i, p := range parts {
		if p == "devices" && i+1 < len(parts) && strings.HasPrefix(parts[i+1], "pci") {
			return parts[i+1], nil
		}
	}
	return "", fmt.Errorf("%s links to %s, which is below no root complex", link, target)
}

// claimDevicesInSysfs: every device the driver allocated to the claim that
// publishes a PCI address is a PCI function in the node's sysfs now, with
// the vendor the driver declares (a VF the driver had to create exists once
// its claim is prepared). A device without a PCI address is a finding: the
// step is for drivers of PCI devices.
func (w *world) claimDevicesInSysfs(ctx context.Context, claim string) (context.Context, error) {
	if w.Cfg.NodeSysfsRoot == "" {
		return kit.Skip(ctx, kit.SysfsSkipReason)
	}
	c, results, err := w.AllocatedClaim(ctx, claim)
	if err != nil {
		return ctx, err
	}
	slices, err := w.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ctx, fmt.Errorf("list ResourceSlices: %w", err)
	}
	var bad, seen []string
	for _, r := range results {
		attrs, ok := kit.SliceDevice(slices.Items, r)
		busID := kit.StringAttr(attrs, kit.PciBusIDAttribute)
		if !ok || busID == "" {
			bad = append(bad, fmt.Sprintf("claim %s: device %s/%s publishes no %s", c.Name, r.Pool, r.Device, kit.PciBusIDAttribute))
			continue
		}
		dir := filepath.Join(w.Cfg.NodeSysfsRoot, "bus", "pci", "devices", busID)
		vendor, err := os.ReadFile(filepath.Join(dir, "vendor"))
		if err != nil {
			bad = append(bad, fmt.Sprintf("claim %s: device %s/%s is PCI function %s, which the node's sysfs does not have (%v)", c.Name, r.Pool, r.Device, busID, err))
			continue
		}
		seen = append(seen, fmt.Sprintf("%s/%s: %s vendor %s", r.Pool, r.Device, busID, strings.TrimSpace(string(vendor))))
		if w.Driver.PCIVendor != "" && strings.TrimPrefix(strings.TrimSpace(string(vendor)), "0x") != w.Driver.PCIVendor {
			bad = append(bad, fmt.Sprintf("claim %s: device %s/%s is PCI function %s of vendor %s, the driver declares %s", c.Name, r.Pool, r.Device, busID, strings.TrimSpace(string(vendor)), w.Driver.PCIVendor))
		}
	}
	return kit.AttachText(ctx, "pci functions", strings.Join(seen, "\n")), kit.Findings(bad)
}
