package kit

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// clusterSteps check what the cluster must offer before a scenario starts.
func (w *World) clusterSteps() []StepDef {
	return []StepDef{
		{Pattern: `^the driver's DeviceClass exists$`, Fn: w.deviceClassExists},
	}
}

func (w *World) deviceClassExists(ctx context.Context) error {
	class := w.Driver.DeviceClass()
	_, err := w.Kube.ResourceV1().DeviceClasses().Get(ctx, class, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("DeviceClass %s does not exist: the driver's deployment must create it (or point the kit at another class)", class)
	}
	if err != nil {
		return fmt.Errorf("get DeviceClass %s: %w", class, err)
	}
	return nil
}
