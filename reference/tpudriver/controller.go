package tpudriver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/pluginharness"
)

// RunController publishes the sub-slice pool of every multi-host slice the
// node pools describe, until ctx is canceled (then it returns nil). It
// reads the driver's node pools every cfg.Interval and hands the pools to
// a ResourceSlice controller without owner, which manages the driver's
// ResourceSlices that have no node name: run one replica per driver.
func RunController(ctx context.Context, cfg ControllerConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	client, err := pluginharness.NewClient(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	return runController(ctx, cfg, client)
}

func runController(ctx context.Context, cfg ControllerConfig, client kubernetes.Interface) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	ctrl, err := resourceslice.StartController(ctx, resourceslice.Options{DriverName: cfg.DriverName, KubeClient: client,
		Resources: &resourceslice.DriverResources{}})
	if err != nil {
		return fmt.Errorf("start ResourceSlice controller of %s: %w", cfg.DriverName, err)
	}
	defer ctrl.Stop()
	var last []string
	for {
		pools, err := controllerPools(ctx, client, cfg)
		if err != nil {
			logger.Error(err, "Reading the node pools failed; keeping the sub-slice pools as they are")
		} else {
			ctrl.Update(&resourceslice.DriverResources{Pools: pools})
			if names := slices.Sorted(maps.Keys(pools)); !slices.Equal(names, last) {
				logger.Info("Publishing sub-slice pools", "pools", names, "shapes", cfg.Shapes)
				last = names
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(cfg.Interval):
		}
	}
}

// controllerPools reads the node pools and plans the sub-slice pools. A
// slice whose sub-slices exceed the limits is logged and left out.
func controllerPools(ctx context.Context, client kubernetes.Interface, cfg ControllerConfig) (map[string]resourceslice.Pool, error) {
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(resourceapi.ResourceSliceSelectorDriver, cfg.DriverName).String()})
	if err != nil {
		return nil, fmt.Errorf("list ResourceSlices of %s: %w", cfg.DriverName, err)
	}
	return SubslicePools(ctx, cfg, list.Items), nil
}

// SubslicePools is the sub-slice pools the controller publishes for the
// driver's node pools in list (its ResourceSlices with a node name; others
// are ignored), keyed by pool name (SubslicePool). A slice whose
// sub-slices exceed the limits is logged and left out. It is the
// controller's planner, exported as the seam through which
// reference/simulate publishes exactly the controller's pools.
func SubslicePools(ctx context.Context, cfg ControllerConfig, list []resourceapi.ResourceSlice) map[string]resourceslice.Pool {
	pools := map[string]resourceslice.Pool{}
	for name, info := range sliceInfos(cfg.DriverName, list) {
		pool, err := subslicePool(cfg.DriverName, *info, cfg.Shapes)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Not publishing the slice's sub-slices", "slice", name)
			continue
		}
		if pool != nil {
			pools[SubslicePool(name)] = *pool
		}
	}
	return pools
}
