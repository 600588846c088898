package nicdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Device status (KEP-4817) the driver writes for each prepared device.
const (
	// ConditionReady is the condition every entry carries: True once the
	// device is prepared.
	ConditionReady = "Ready"
	// ReasonPrepared is its reason.
	ReasonPrepared = "Prepared"
)

// deviceData is the data of a device's status entry: a small JSON object.
type deviceData struct {
	// Type is "vf" or "pf" (a bandwidth share of the PF).
	Type string `json:"type"`
	// PCIAddress is the VF's or PF's, PFPCIAddress the VF's PF's.
	PCIAddress   string `json:"pciAddress,omitempty"`
	PFPCIAddress string `json:"pfPCIAddress,omitempty"`
	VFIndex      *int   `json:"vfIndex,omitempty"`
	// RDMADevice and UverbsDevice (the container path of its node) for
	// an RDMA VF.
	RDMADevice   string `json:"rdmaDevice,omitempty"`
	UverbsDevice string `json:"uverbsDevice,omitempty"`
	// Bandwidth is what a PF share consumes, LinkSpeed the PF's link
	// (quantities, bits per second).
	Bandwidth string `json:"bandwidth,omitempty"`
	LinkSpeed string `json:"linkSpeed,omitempty"`
}

// deviceStatus is what the driver reports about one prepared device.
type deviceStatus struct {
	data       deviceData
	iface, mac string
	message    string
}

// statuses builds the claim's status.devices entries of this driver:
// exactly one per allocation result of the driver in its pool (keyed by
// driver, pool, device and shareID), from what prepare recorded (info, by
// result index; a result without info is not the driver's to report).
// Each has condition Ready (True, reason Prepared), data and, where the
// device has an interface, address or configured IP, networkData.
func statuses(claim *resourceapi.ResourceClaim, driver, pool string, info map[int]deviceStatus, ips map[string]string, now time.Time) ([]resourceapi.AllocatedDeviceStatus, error) {
	if claim.Status.Allocation == nil {
		return nil, nil
	}
	var out []resourceapi.AllocatedDeviceStatus
	for i, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != driver || r.Pool != pool {
			continue
		}
		st, ok := info[i]
		if !ok {
			continue
		}
		data, err := json.Marshal(st.data)
		if err != nil {
			return nil, fmt.Errorf("encode the status data of device %s: %w", r.Device, err)
		}
		entry := resourceapi.AllocatedDeviceStatus{
			Driver: r.Driver, Pool: r.Pool, Device: r.Device,
			Conditions: []metav1.Condition{{
				Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonPrepared, Message: st.message,
				ObservedGeneration: claim.Generation, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
			}},
			Data: &runtime.RawExtension{Raw: data},
		}
		if r.ShareID != nil {
			entry.ShareID = ptrString(string(*r.ShareID))
		}
		nd := resourceapi.NetworkDeviceData{InterfaceName: st.iface, HardwareAddress: st.mac}
		if ip, ok := ips[r.Device]; ok {
			nd.IPs = []string{ip}
		}
		if nd.InterfaceName != "" || nd.HardwareAddress != "" || len(nd.IPs) > 0 {
			entry.NetworkData = &nd
		}
		out = append(out, entry)
	}
	return out, nil
}

func ptrString(s string) *string { return &s }

// statusWriter writes a claim's status.devices entries of the driver with
// server-side apply, field manager <driver>: the entries of other drivers
// (and other managers) stay; applying none removes the driver's.
type statusWriter struct {
	client kubernetes.Interface
	driver string
}

// retriable are the errors a status write is tried again after.
func retriable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err)
}

// apply makes the driver's entries of the claim (namespace, name, uid) be
// entries. The UID is part of the request, so a claim replaced by another
// of the same name is not written.
func (w *statusWriter) apply(ctx context.Context, namespace, name string, uid types.UID, entries []resourceapi.AllocatedDeviceStatus) error {
	status := resourceapply.ResourceClaimStatus()
	for _, e := range entries {
		status.WithDevices(applyEntry(e))
	}
	ac := resourceapply.ResourceClaim(name, namespace).WithUID(uid).WithStatus(status)
	err := retry.OnError(retry.DefaultBackoff, retriable, func() error {
		_, err := w.client.ResourceV1().ResourceClaims(namespace).ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: w.driver, Force: true})
		return err
	})
	if err != nil {
		return fmt.Errorf("write status.devices of claim %s/%s: %w", namespace, name, err)
	}
	return nil
}

func applyEntry(e resourceapi.AllocatedDeviceStatus) *resourceapply.AllocatedDeviceStatusApplyConfiguration {
	a := resourceapply.AllocatedDeviceStatus().WithDriver(e.Driver).WithPool(e.Pool).WithDevice(e.Device)
	if e.ShareID != nil {
		a.WithShareID(*e.ShareID)
	}
	for _, c := range e.Conditions {
		a.WithConditions(metav1apply.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).
			WithMessage(c.Message).WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(c.LastTransitionTime))
	}
	if e.Data != nil {
		a.WithData(*e.Data)
	}
	if nd := e.NetworkData; nd != nil {
		n := resourceapply.NetworkDeviceData()
		if nd.InterfaceName != "" {
			n.WithInterfaceName(nd.InterfaceName)
		}
		if nd.HardwareAddress != "" {
			n.WithHardwareAddress(nd.HardwareAddress)
		}
		if len(nd.IPs) > 0 {
			n.WithIPs(nd.IPs...)
		}
		a.WithNetworkData(n)
	}
	return a
}
