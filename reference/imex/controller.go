package imex

import (
	"context"
	"fmt"
	"reflect"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/pluginharness"
)

// Run publishes the IMEX channel pools of the cluster's cliques until ctx
// ends (then it returns nil).
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	client, err := pluginharness.NewClient(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	return run(ctx, cfg, client)
}

// run is Run with the client injected.
func run(ctx context.Context, cfg Config, client kubernetes.Interface) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	class, err := client.ResourceV1().DeviceClasses().Get(ctx, cfg.DeviceClass, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get the IMEX DeviceClass %s, the owner of the channel slices: %w", cfg.DeviceClass, err)
	}
	// The node slices of the driver: a field selector on the driver (the
	// node name is filtered below, as an empty one cannot be negated).
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector(resourceapi.ResourceSliceSelectorDriver, cfg.DriverName).String()
	}))
	informer := factory.Resource().V1().ResourceSlices()
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke,
	}); err != nil {
		return fmt.Errorf("watch ResourceSlices: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		return ctx.Err()
	}
	current := func() (map[string][]string, error) {
		list, err := informer.Lister().List(labels.Everything())
		if err != nil {
			return nil, err
		}
		items := make([]resourceapi.ResourceSlice, 0, len(list))
		for _, s := range list {
			items = append(items, *s)
		}
		return Cliques(cfg.DriverName, items), nil
	}
	cliques, err := current()
	if err != nil {
		return fmt.Errorf("list ResourceSlices: %w", err)
	}
	ctrl, err := resourceslice.StartController(ctx, resourceslice.Options{
		DriverName: cfg.DriverName,
		KubeClient: client,
		Owner:      &resourceslice.Owner{APIVersion: "resource.k8s.io/v1", Kind: "DeviceClass", Name: class.Name, UID: class.UID},
		Resources:  Resources(cliques, cfg.Channels),
		ErrorHandler: func(ctx context.Context, err error, msg string) {
			klog.FromContext(ctx).Error(err, "Publishing IMEX channels", "detail", msg)
		},
	})
	if err != nil {
		return fmt.Errorf("start the ResourceSlice controller: %w", err)
	}
	defer ctrl.Stop()
	logger.Info("IMEX controller running", "driver", cfg.DriverName, "cliques", len(cliques), "channels", cfg.Channels)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		next, err := current()
		if err != nil {
			return fmt.Errorf("list ResourceSlices: %w", err)
		}
		if reflect.DeepEqual(next, cliques) {
			continue
		}
		logger.Info("Cliques changed", "cliques", next)
		cliques = next
		ctrl.Update(Resources(cliques, cfg.Channels))
	}
}
