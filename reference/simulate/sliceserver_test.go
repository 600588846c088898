package simulate

import (
	"fmt"
	"slices"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
)

// sliceServer makes a fake clientset serve ResourceSlices as the API server
// serves them to many publishers: list and watch honour the field selectors
// spec.driver, spec.nodeName and spec.pool.name, creates honour
// generateName, and an event reaches only the watches it matches. (The
// fake's own watches ignore field selectors, deep-copy every event for every
// watch and panic when 100 events are unread.) A watch starts at the current
// state: the tests create nothing between an informer's list and its watch.
type sliceServer struct {
	mu      sync.Mutex
	watches []*sliceWatch
	names   int
}

type sliceWatch struct {
	server   *sliceServer
	selector fields.Selector
	result   chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

func (w *sliceWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *sliceWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.server.mu.Lock()
		defer w.server.mu.Unlock()
		w.server.watches = slices.DeleteFunc(w.server.watches, func(o *sliceWatch) bool { return o == w })
	})
}

func sliceFields(s *resourceapi.ResourceSlice) fields.Set {
	node := ""
	if s.Spec.NodeName != nil {
		node = *s.Spec.NodeName
	}
	return fields.Set{
		"metadata.name":                           s.Name,
		resourceapi.ResourceSliceSelectorDriver:   s.Spec.Driver,
		resourceapi.ResourceSliceSelectorNodeName: node,
		resourceapi.ResourceSliceSelectorPoolName: s.Spec.Pool.Name,
	}
}

// broadcast runs under the fake's lock; a full watch blocks it until its
// reader catches up or stops.
func (s *sliceServer) broadcast(t watch.EventType, slice *resourceapi.ResourceSlice) {
	s.mu.Lock()
	watches := slices.Clone(s.watches)
	s.mu.Unlock()
	f := sliceFields(slice)
	for _, w := range watches {
		if !w.selector.Matches(f) {
			continue
		}
		select {
		case w.result <- watch.Event{Type: t, Object: slice.DeepCopy()}:
		case <-w.done:
		}
	}
}

// newSliceServer returns a fake clientset with objects whose ResourceSlices
// live in a plain object tracker: the fake's own tracker manages fields and
// builds a REST mapper on every write, which would dominate the benchmarks.
func newSliceServer(objects ...runtime.Object) *fake.Clientset {
	tracker := k8stesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder())
	var others []runtime.Object
	for _, obj := range objects {
		if _, ok := obj.(*resourceapi.ResourceSlice); ok {
			if err := tracker.Add(obj); err != nil {
				panic(err)
			}
			continue
		}
		others = append(others, obj)
	}
	client := fake.NewClientset(others...)
	s := &sliceServer{}
	react := k8stesting.ObjectReaction(tracker)
	gvr := resourceapi.SchemeGroupVersion.WithResource("resourceslices")
	client.PrependReactor("*", "resourceslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		var event watch.EventType
		var old runtime.Object
		switch action.GetVerb() {
		case "list":
			_, obj, err := react(action)
			if err != nil {
				return true, nil, err
			}
			list := obj.(*resourceapi.ResourceSliceList)
			selector := action.(k8stesting.ListAction).GetListRestrictions().Fields
			list.Items = slices.DeleteFunc(list.Items, func(s resourceapi.ResourceSlice) bool { return !selector.Matches(sliceFields(&s)) })
			return true, list, nil
		case "create":
			slice := action.(k8stesting.CreateAction).GetObject().(*resourceapi.ResourceSlice)
			if slice.Name == "" && slice.GenerateName != "" {
				slice.Name = fmt.Sprintf("%s%d", slice.GenerateName, s.names)
				s.names++
			}
			event = watch.Added
		case "update":
			event = watch.Modified
		case "delete":
			old, _ = tracker.Get(gvr, "", action.(k8stesting.DeleteAction).GetName())
			event = watch.Deleted
		}
		handled, obj, err := react(action)
		if err == nil && event != "" {
			if event == watch.Deleted {
				obj = old
			}
			s.broadcast(event, obj.(*resourceapi.ResourceSlice))
		}
		return handled, obj, err
	})
	client.PrependWatchReactor("resourceslices", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w := &sliceWatch{server: s, selector: action.(k8stesting.WatchAction).GetWatchRestrictions().Fields,
			result: make(chan watch.Event, 1024), done: make(chan struct{})}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.watches = append(s.watches, w)
		return true, w, nil
	})
	return client
}
