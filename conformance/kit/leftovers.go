package kit

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// removeLeftoverRules deletes the DeviceTaintRules of earlier runs of the
// kit (labelled as its own) for the driver under test before the scenarios
// start: a run killed in the middle of a scenario leaves its rules behind,
// and a NoExecute one would evict the pods of every later scenario on its
// device. Rules for other drivers' devices are left alone: they may be a
// run of the kit against another driver on the same cluster at the same
// time (the verdict matrix certifies many drivers side by side).
func (s *Suite) removeLeftoverRules(ctx context.Context) error {
	list, err := s.Kube.ResourceV1().DeviceTaintRules().List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedByKit})
	if apierrors.IsNotFound(err) {
		return nil // the API server serves no DeviceTaintRules: there can be none
	}
	if err != nil {
		return fmt.Errorf("list the kit's DeviceTaintRules left by earlier runs: %w", err)
	}
	var errs []error
	for _, r := range list.Items {
		if sel := r.Spec.DeviceSelector; sel == nil || ptr.Deref(sel.Driver, "") != s.Driver.DriverName {
			continue
		}
		klog.FromContext(ctx).Info("Deleting a DeviceTaintRule an earlier run of the kit left behind", "rule", r.Name, "effect", r.Spec.Taint.Effect)
		if err := s.Kube.ResourceV1().DeviceTaintRules().Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete DeviceTaintRule %s left by an earlier run: %w", r.Name, err))
		}
	}
	return errors.Join(errs...)
}
