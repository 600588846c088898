package live

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
)

// schedulerSlices returns the cluster's ResourceSlices as kube-scheduler
// allocates from them: with the taint of every DeviceTaintRule added to the
// devices the rule selects. The rules are applied by upstream's
// ResourceSlice tracker (k8s.io/dynamic-resource-allocation/resourceslice/
// tracker), which kube-scheduler uses itself, on informers of its own that
// live only for this call. Without any DeviceTaintRule (or when the API
// server serves none) the slices are listed as stored.
func schedulerSlices(ctx context.Context, kube kubernetes.Interface) ([]*resourceapi.ResourceSlice, error) {
	rules, err := kube.ResourceV1().DeviceTaintRules().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("list DeviceTaintRules: %w", err)
	}
	if err != nil || len(rules.Items) == 0 {
		sl, err := kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list ResourceSlices: %w", err)
		}
		out := make([]*resourceapi.ResourceSlice, len(sl.Items))
		for i := range sl.Items {
			out[i] = &sl.Items[i]
		}
		return out, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(kube, 0)
	// The informers stop when ctx is cancelled, which Shutdown waits for.
	defer factory.Shutdown()
	defer cancel()
	t, err := tracker.StartTracker(ctx, tracker.Options{
		EnableDeviceTaintRules: true,
		SliceInformer:          factory.Resource().V1().ResourceSlices(),
		TaintInformer:          factory.Resource().V1().DeviceTaintRules(),
	})
	if err != nil {
		return nil, fmt.Errorf("start the ResourceSlice tracker: %w", err)
	}
	defer t.Stop()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), t.HasSynced) {
		return nil, fmt.Errorf("sync the ResourceSlice tracker with ResourceSlices and DeviceTaintRules: %w", context.Cause(ctx))
	}
	return t.ListPatchedResourceSlices()
}
