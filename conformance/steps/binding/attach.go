package binding

import (
	"context"
	"fmt"

	"drakit.dev/drakit/conformance/kit"
	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// attachController stands in for the controller that, with KEP-5007 device
// binding conditions, attaches a device to the node the scheduler chose and
// reports the outcome as conditions of the device in the claim's
// status.devices, where the scheduler waits for them in PreBind. The kit
// writes them through the API, as such a controller would; it is one per
// scenario (the world's).
type attachController struct {
	// claimRV is the claim's resource version after the controller's last
	// write, by claim name.
	claimRV map[string]string
}

// setCondition sets cond on every device allocated to the claim that has
// binding conditions, in status.devices (adding the device's entry when it
// has none), and returns the claim's resource version after the write.
func (a *attachController) setCondition(ctx context.Context, kube kubernetes.Interface, ns, claim string, cond metav1.Condition) (string, error) {
	var rv string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := kube.ResourceV1().ResourceClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get claim %s: %w", claim, err)
		}
		if err := setDeviceCondition(c, cond); err != nil {
			return err
		}
		got, err := kube.ResourceV1().ResourceClaims(ns).UpdateStatus(ctx, c, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update status of claim %s with condition %s=%s: %w", claim, cond.Type, cond.Status, err)
		}
		rv = got.ResourceVersion
		return nil
	})
	return rv, err
}

// setDeviceCondition edits the claim: cond on the status.devices entry of
// every allocated device with binding conditions.
func setDeviceCondition(c *resourceapi.ResourceClaim, cond metav1.Condition) error {
	if c.Status.Allocation == nil {
		return fmt.Errorf("claim %s is not allocated: there is no device to attach", c.Name)
	}
	n := 0
	for _, r := range c.Status.Allocation.Devices.Results {
		if len(r.BindingConditions) == 0 {
			continue
		}
		n++
		i := deviceStatusIndex(c, r)
		if i < 0 {
			c.Status.Devices = append(c.Status.Devices, resourceapi.AllocatedDeviceStatus{Driver: r.Driver, Pool: r.Pool, Device: r.Device, ShareID: (*string)(r.ShareID)})
			i = len(c.Status.Devices) - 1
		}
		apimeta.SetStatusCondition(&c.Status.Devices[i].Conditions, cond)
	}
	if n == 0 {
		return fmt.Errorf("claim %s: no device allocated to it has binding conditions (results %s)", c.Name, kit.ResultIDs(c.Status.Allocation.Devices.Results))
	}
	return nil
}

// deviceStatusIndex is the index of the result's device in
// status.devices, -1 if it has no entry.
func deviceStatusIndex(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult) int {
	for i, d := range c.Status.Devices {
		if d.Driver == r.Driver && d.Pool == r.Pool && d.Device == r.Device && sameShare(d.ShareID, (*string)(r.ShareID)) {
			return i
		}
	}
	return -1
}

func sameShare(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
