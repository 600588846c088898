package status

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	resourcev1ac "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/report"
)

// statusSteps are KEP-4817's: what the driver reports in a claim's
// status.devices, checked against the claim's allocation and the node, and
// what the API server accepts there from whom.
func (w *world) statusSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the driver reports the status of exactly the devices allocated to the claim "([^"]+)"$`, Fn: w.driverReportsStatus},
		{Pattern: `^the network data the driver reports for the claim "([^"]+)" names interfaces of the node$`, Fn: w.networkDataOnNode},
		{Pattern: `^the claim "([^"]+)" has no device status$`, Fn: w.claimHasNoStatus},
		{Pattern: `^a status entry for a device not allocated to the claim "([^"]+)" is submitted$`, Fn: w.submitUnallocatedStatus},
		{Pattern: `^a status entry for the claim "([^"]+)" with (.+) is submitted$`, Fn: w.submitDefectiveStatus},
		{Pattern: `^the driver's ServiceAccount cannot write the status of the other driver's device in the claim "([^"]+)"$`, Fn: w.driverCannotWriteOthersStatus},
	}
}

// kindStatus labels status submissions.
const kindStatus = "status of ResourceClaim"

// statusKey identifies a status.devices entry, as the API's list map does.
func statusKey(driver, pool, device string, share *string) string {
	return fmt.Sprintf("%s/%s/%s/%s", driver, pool, device, ptr.Deref(share, ""))
}

func resultKey(r resourceapi.DeviceRequestAllocationResult) string {
	var share *string
	if r.ShareID != nil {
		share = ptr.To(string(*r.ShareID))
	}
	return statusKey(r.Driver, r.Pool, r.Device, share)
}

func entryKey(e resourceapi.AllocatedDeviceStatus) string {
	return statusKey(e.Driver, e.Pool, e.Device, e.ShareID)
}

// driverReportsStatus waits until the claim's status.devices has an entry
// of the driver for every device allocated to the claim from it (same
// pool, device and share ID), and none for another device.
func (w *world) driverReportsStatus(ctx context.Context, claim string) (context.Context, error) {
	var last *resourceapi.ResourceClaim
	err := kit.Poll(ctx, w.Cfg.Timeouts.PodStart, "the driver to report the status of claim "+claim+"'s devices", func(ctx context.Context) (bool, string, error) {
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		last = c
		missing, _ := w.statusGaps(c)
		if c.Status.Allocation == nil {
			return false, "not allocated", nil
		}
		return len(missing) == 0, "no status for " + strings.Join(missing, ", "), nil
	})
	if err != nil {
		return ctx, err
	}
	_, extra := w.statusGaps(last)
	var bad []string
	for _, e := range extra {
		bad = append(bad, fmt.Sprintf("claim %s: the driver reports status for %s, which is not allocated to the claim", claim, e))
	}
	var shown []string
	for _, e := range last.Status.Devices {
		if e.Driver == w.Driver.DriverName {
			shown = append(shown, describeStatus(e))
		}
	}
	ctx = kit.AttachText(ctx, "device status", strings.Join(shown, "\n"))
	return ctx, kit.Findings(bad)
}

// statusGaps are the driver's allocated devices without a status entry and
// the driver's entries for devices not allocated to the claim.
func (w *world) statusGaps(c *resourceapi.ResourceClaim) (missing, extra []string) {
	allocated := map[string]bool{}
	for _, r := range kit.DriverResults(c, w.Driver.DriverName) {
		allocated[resultKey(r)] = true
	}
	reported := map[string]bool{}
	for _, e := range c.Status.Devices {
		if e.Driver != w.Driver.DriverName {
			continue
		}
		reported[entryKey(e)] = true
		if !allocated[entryKey(e)] {
			extra = append(extra, entryKey(e))
		}
	}
	for k := range allocated {
		if !reported[k] {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	return missing, extra
}

func describeStatus(e resourceapi.AllocatedDeviceStatus) string {
	var conds []string
	for _, c := range e.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	s := fmt.Sprintf("%s: conditions [%s]", entryKey(e), strings.Join(conds, " "))
	if e.Data != nil {
		s += " data " + string(e.Data.Raw)
	}
	if n := e.NetworkData; n != nil {
		s += fmt.Sprintf(" networkData{interfaceName %q, hardwareAddress %q, ips %v}", n.InterfaceName, n.HardwareAddress, n.IPs)
	}
	return s
}

// networkDataOnNode compares the interfaces the driver names in the claim's
// status with the node's sysfs: each exists in class/net and has the
// reported hardware address.
func (w *world) networkDataOnNode(ctx context.Context, claim string) (context.Context, error) {
	if w.Cfg.NodeSysfsRoot == "" {
		return kit.Skip(ctx, kit.SysfsSkipReason)
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return ctx, fmt.Errorf("get claim %s: %w", claim, err)
	}
	var bad []string
	checked := 0
	for _, e := range c.Status.Devices {
		if e.Driver != w.Driver.DriverName || e.NetworkData == nil || e.NetworkData.InterfaceName == "" {
			continue
		}
		checked++
		dir := filepath.Join(w.Cfg.NodeSysfsRoot, "class", "net", e.NetworkData.InterfaceName)
		addr, err := os.ReadFile(filepath.Join(dir, "address"))
		switch {
		case errors.Is(err, os.ErrNotExist):
			bad = append(bad, fmt.Sprintf("claim %s: device %s reports interface %s, which the node does not have (%s)", claim, entryKey(e), e.NetworkData.InterfaceName, dir))
		case err != nil:
			return ctx, fmt.Errorf("read the node's interface %s: %w", e.NetworkData.InterfaceName, err)
		case e.NetworkData.HardwareAddress != "" && !strings.EqualFold(strings.TrimSpace(string(addr)), e.NetworkData.HardwareAddress):
			bad = append(bad, fmt.Sprintf("claim %s: device %s reports interface %s with hardware address %s, the node's has %s",
				claim, entryKey(e), e.NetworkData.InterfaceName, e.NetworkData.HardwareAddress, strings.TrimSpace(string(addr))))
		}
	}
	if checked == 0 {
		return kit.Skip(ctx, fmt.Sprintf("the driver reports no network interface for the devices of claim %s", claim))
	}
	return ctx, kit.Findings(bad)
}

// claimHasNoStatus waits until the claim's status.devices is empty, as
// the API server makes it when the allocation goes.
func (w *world) claimHasNoStatus(ctx context.Context, claim string) error {
	return kit.Poll(ctx, w.Cfg.Timeouts.Cleanup, "claim "+claim+" to have no device status", func(ctx context.Context) (bool, string, error) {
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		var left []string
		for _, e := range c.Status.Devices {
			left = append(left, entryKey(e))
		}
		return len(left) == 0, "status.devices still lists " + strings.Join(left, ", "), nil
	})
}

// readyCondition is a condition the kit writes into status entries.
func readyCondition() metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "KitProbe", Message: "written by drakit's conformance kit", LastTransitionTime: metav1.Now()}
}

// submitStatus writes entry as the first of the claim's status.devices,
// replacing any entry with its key, and records the API server's answer.
func (w *world) submitStatus(ctx context.Context, c *resourceapi.ResourceClaim, entry resourceapi.AllocatedDeviceStatus) {
	c = c.DeepCopy()
	rest := slices.DeleteFunc(c.Status.Devices, func(e resourceapi.AllocatedDeviceStatus) bool { return entryKey(e) == entryKey(entry) })
	c.Status.Devices = append([]resourceapi.AllocatedDeviceStatus{entry}, rest...)
	_, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).UpdateStatus(ctx, c, metav1.UpdateOptions{})
	w.Submitted = &kit.Submission{Kind: kindStatus, Name: c.Name, Err: err}
}

// submitUnallocatedStatus writes a status entry of the driver for a device
// name no allocation of the claim has.
func (w *world) submitUnallocatedStatus(ctx context.Context, claim string) error {
	c, results, err := w.AllocatedClaim(ctx, claim)
	if err != nil {
		return err
	}
	w.submitStatus(ctx, c, resourceapi.AllocatedDeviceStatus{
		Driver: w.Driver.DriverName, Pool: results[0].Pool, Device: results[0].Device + "-not-allocated",
		Conditions: []metav1.Condition{readyCondition()},
	})
	return nil
}

// statusDefects are the invalid status entries the validation scenarios
// submit, by the text that names them in the features, as edits of an
// entry for an allocated device.
var statusDefects = map[string]func(e *resourceapi.AllocatedDeviceStatus){
	"an interface name of 257 bytes": func(e *resourceapi.AllocatedDeviceStatus) {
		e.NetworkData = &resourceapi.NetworkDeviceData{InterfaceName: strings.Repeat("i", 257)}
	},
	"a hardware address of 129 bytes": func(e *resourceapi.AllocatedDeviceStatus) {
		e.NetworkData = &resourceapi.NetworkDeviceData{HardwareAddress: strings.Repeat("a", 129)}
	},
	`the IP "192.0.2.5" without a prefix length`: func(e *resourceapi.AllocatedDeviceStatus) {
		e.NetworkData = &resourceapi.NetworkDeviceData{IPs: []string{"192.0.2.5"}}
	},
	`the IP "192.0.2.5/24" twice`: func(e *resourceapi.AllocatedDeviceStatus) {
		e.NetworkData = &resourceapi.NetworkDeviceData{IPs: []string{"192.0.2.5/24", "192.0.2.5/24"}}
	},
	"17 IPs": func(e *resourceapi.AllocatedDeviceStatus) {
		var ips []string
		for i := range 17 {
			ips = append(ips, fmt.Sprintf("192.0.2.%d/24", i+1))
		}
		e.NetworkData = &resourceapi.NetworkDeviceData{IPs: ips}
	},
	"9 conditions": func(e *resourceapi.AllocatedDeviceStatus) {
		e.Conditions = nil
		for i := range 9 {
			c := readyCondition()
			c.Type = fmt.Sprintf("Probe%d", i)
			e.Conditions = append(e.Conditions, c)
		}
	},
	"data that is not a JSON object": func(e *resourceapi.AllocatedDeviceStatus) {
		e.Data = &runtime.RawExtension{Raw: []byte(`["not", "an", "object"]`)}
	},
}

// submitDefectiveStatus writes a status entry for the claim's first
// device of the driver with the defect.
func (w *world) submitDefectiveStatus(ctx context.Context, claim, defect string) error {
	edit, ok := statusDefects[defect]
	if !ok {
		return fmt.Errorf("unknown status defect %q (known: %s)", defect, strings.Join(slices.Sorted(maps.Keys(statusDefects)), "; "))
	}
	c, results, err := w.AllocatedClaim(ctx, claim)
	if err != nil {
		return err
	}
	r := results[0]
	entry := resourceapi.AllocatedDeviceStatus{Driver: r.Driver, Pool: r.Pool, Device: r.Device, Conditions: []metav1.Condition{readyCondition()}}
	if r.ShareID != nil {
		entry.ShareID = ptr.To(string(*r.ShareID))
	}
	edit(&entry)
	w.submitStatus(ctx, c, entry)
	return nil
}

// driverCannotWriteOthersStatus acts as the driver's ServiceAccount on the
// claim's node (as a node-bound token of a driver pod authenticates) and
// writes a status entry for the device another driver allocated to the
// claim: the API server must refuse it as Forbidden on
// resourceclaims/driver, the granular status authorization of KEP-4817.
func (w *world) driverCannotWriteOthersStatus(ctx context.Context, claim string) (context.Context, error) {
	if w.Driver.DriverPodSelector == "" {
		return kit.Skip(ctx, report.NotDeclaredPrefix+"the driver declares no pods (driver.pods, or --driver-pod-selector): the kit cannot tell its ServiceAccount")
	}
	if w.Impersonate == nil {
		return kit.Skip(ctx, "the kit cannot act as another identity here")
	}
	c, _, err := w.AllocatedClaim(ctx, claim)
	if err != nil {
		return ctx, err
	}
	var other *resourceapi.DeviceRequestAllocationResult
	for i, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != w.Driver.DriverName {
			other = &c.Status.Allocation.Devices.Results[i]
			break
		}
	}
	if other == nil {
		return ctx, fmt.Errorf("claim %s has no device of another driver", claim)
	}
	pod, err := w.driverPodOnNode(ctx, c)
	if err != nil {
		return ctx, err
	}
	ns, sa := pod.Namespace, pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	as := rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		Extra:    map[string][]string{"authentication.kubernetes.io/node-name": {pod.Spec.NodeName}},
	}
	client, err := w.Impersonate(as)
	if err != nil {
		return ctx, err
	}
	// Server-side apply, as drivers write status (a driver needs only
	// patch on resourceclaims/status): one entry, for the other driver's
	// device.
	cond := readyCondition()
	entry := resourcev1ac.AllocatedDeviceStatus().WithDriver(other.Driver).WithPool(other.Pool).WithDevice(other.Device).
		WithConditions(metav1ac.Condition().WithType(cond.Type).WithStatus(cond.Status).WithReason(cond.Reason).
			WithMessage(cond.Message).WithLastTransitionTime(cond.LastTransitionTime))
	if other.ShareID != nil {
		entry = entry.WithShareID(string(*other.ShareID))
	}
	apply := resourcev1ac.ResourceClaim(c.Name, c.Namespace).WithUID(c.UID).WithStatus(resourcev1ac.ResourceClaimStatus().WithDevices(entry))
	_, err = client.ResourceV1().ResourceClaims(w.Ns).ApplyStatus(ctx, apply, metav1.ApplyOptions{FieldManager: "drakit-conformance", Force: true})
	who := fmt.Sprintf("ServiceAccount %s/%s on node %s", ns, sa, pod.Spec.NodeName)
	// The API server refuses it in validation: 422 with a Forbidden cause
	// at status.devices that names resourceclaims/driver (a 403 from
	// authorization would do too).
	switch {
	case err == nil:
		return ctx, fmt.Errorf("the API server let %s write the status of device %s/%s of driver %s in claim %s", who, other.Pool, other.Device, other.Driver, claim)
	case !apierrors.IsForbidden(err) && !hasCause(err, metav1.CauseTypeForbidden, "status.devices"):
		return ctx, fmt.Errorf("%s writing the status of driver %s's device: expected it forbidden by the status authorization on resourceclaims/driver, got: %w", who, other.Driver, err)
	case !strings.Contains(err.Error(), "resourceclaims/driver"):
		return ctx, fmt.Errorf("%s writing the status of driver %s's device was forbidden, but not by the status authorization on resourceclaims/driver: %w", who, other.Driver, err)
	}
	return kit.AttachText(ctx, "refusal", err.Error()), nil
}

// hasCause says whether err is an API status with a cause of the type at
// field.
func hasCause(err error, cause metav1.CauseType, field string) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type == cause && c.Field == field {
			return true
		}
	}
	return false
}

// driverPodOnNode is a running pod of the driver on the node of the claim's
// allocation.
func (w *world) driverPodOnNode(ctx context.Context, c *resourceapi.ResourceClaim) (*corev1.Pod, error) {
	node, err := w.AllocationNode(ctx, c)
	if err != nil {
		return nil, err
	}
	pods, err := w.Kube.CoreV1().Pods(w.Driver.DriverNamespace).List(ctx, metav1.ListOptions{LabelSelector: w.Driver.DriverPodSelector})
	if err != nil {
		return nil, fmt.Errorf("list the driver's pods (%s): %w", w.Driver.DriverPodSelector, err)
	}
	for i, p := range pods.Items {
		if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no running pod of the driver (%s) on node %s", w.Driver.DriverPodSelector, node)
}
