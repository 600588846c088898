package quota

import (
	"context"
	"fmt"
	"strings"

	"drakit.dev/drakit/conformance/kit"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// quotaSteps put a ResourceQuota on the devices of the driver's DeviceClass
// in the scenario's namespace (it goes with the namespace) and check what
// the API server's quota admission charged.
func (w *world) quotaSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the scenario's namespace has a ResourceQuota of (\d+) devices of the driver's DeviceClass$`, Fn: w.namespaceDeviceQuota},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting first (\d+) devices? as "([^"]+)", else (\d+) devices? as "([^"]+)" is submitted$`, Fn: w.submitFirstAvailable},
		{Pattern: `^the ResourceQuota rejects it as exceeded$`, Fn: w.rejectedByQuota},
		{Pattern: `^the ResourceQuota counts (\d+) devices of the driver's DeviceClass as used$`, Fn: w.quotaUsed},
	}
}

// namespaceDeviceQuota creates the quota and waits until the quota
// controller has filled in its status: admission enforces status.hard.
func (w *world) namespaceDeviceQuota(ctx context.Context, n int) error {
	res := kit.DeviceQuotaResource(w.Driver.DeviceClass())
	q := &corev1.ResourceQuota{ObjectMeta: kit.KitMeta(kit.DeviceQuotaName), Spec: corev1.ResourceQuotaSpec{
		Hard: corev1.ResourceList{res: *resource.NewQuantity(int64(n), resource.DecimalSI)},
	}}
	if _, err := w.Kube.CoreV1().ResourceQuotas(w.Ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ResourceQuota %s: %w", kit.DeviceQuotaName, err)
	}
	return kit.Poll(ctx, w.Cfg.Timeouts.PodStart, "ResourceQuota "+kit.DeviceQuotaName+" to be counted", func(ctx context.Context) (bool, string, error) {
		got, err := w.Kube.CoreV1().ResourceQuotas(w.Ns).Get(ctx, kit.DeviceQuotaName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		_, ok := got.Status.Hard[res]
		return ok, "status.hard does not list " + string(res), nil
	})
}

// submitFirstAvailable tries to create a prioritized-list claim and
// remembers the outcome, as submitClaim does.
func (w *world) submitFirstAvailable(ctx context.Context, name string, first int, firstName string, second int, secondName string) error {
	class := w.Driver.DeviceClass()
	claim := kit.NewClaim(name, kit.FirstAvailableSpec(kit.SubRequest(firstName, class, int64(first)), kit.SubRequest(secondName, class, int64(second))))
	_, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Create(ctx, claim, metav1.CreateOptions{})
	if err == nil {
		w.Ledger.Add(kit.KindClaim, name)
	}
	w.Submitted = &kit.Submission{Kind: kit.KindClaim, Name: name, Err: err}
	return nil
}

func (w *world) rejectedByQuota() error {
	s, err := w.LastSubmission()
	if err != nil {
		return err
	}
	if s.Err == nil {
		return fmt.Errorf("the API server accepted %s; expected 403 Forbidden: exceeded quota %s", s.Label(), kit.DeviceQuotaName)
	}
	if !apierrors.IsForbidden(s.Err) || !strings.Contains(s.Err.Error(), "exceeded quota: "+kit.DeviceQuotaName) {
		return fmt.Errorf("%s was rejected, but not as exceeding quota %s (reason %s): %v", s.Label(), kit.DeviceQuotaName, apierrors.ReasonForError(s.Err), s.Err)
	}
	return nil
}

func (w *world) quotaUsed(ctx context.Context, n int) error {
	res := kit.DeviceQuotaResource(w.Driver.DeviceClass())
	want := *resource.NewQuantity(int64(n), resource.DecimalSI)
	return kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("ResourceQuota %s to count %d %s used", kit.DeviceQuotaName, n, res), func(ctx context.Context) (bool, string, error) {
		got, err := w.Kube.CoreV1().ResourceQuotas(w.Ns).Get(ctx, kit.DeviceQuotaName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		used, ok := got.Status.Used[res]
		if !ok {
			return false, "status.used does not list " + string(res), nil
		}
		return used.Cmp(want) == 0, "status.used counts " + used.String(), nil
	})
}
