package imex

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

// fakeClient is a fake clientset whose ResourceSlice lists and watches
// honour field selectors on spec.driver and spec.nodeName, as the API
// server does (the fake's tracker ignores them), and whose creates fill in
// generated names.
func fakeClient(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	matches := func(sel fields.Selector, s *resourceapi.ResourceSlice) bool {
		return sel.Matches(fields.Set{
			resourceapi.ResourceSliceSelectorDriver:   s.Spec.Driver,
			resourceapi.ResourceSliceSelectorNodeName: ptr.Deref(s.Spec.NodeName, ""),
		})
	}
	selector := func(r fields.Selector) fields.Selector {
		if r == nil {
			return fields.Everything()
		}
		return r
	}
	generated := 0
	c.PrependReactor("create", "resourceslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*resourceapi.ResourceSlice)
		if s.Name == "" && s.GenerateName != "" {
			generated++
			s.Name = fmt.Sprintf("%s%05d", s.GenerateName, generated)
		}
		return false, nil, nil // the tracker stores it
	})
	c.PrependReactor("list", "resourceslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel := selector(a.(k8stesting.ListAction).GetListRestrictions().Fields)
		obj, err := c.Tracker().List(a.GetResource(), resourceapi.SchemeGroupVersion.WithKind("ResourceSlice"), "")
		if err != nil {
			return true, nil, err
		}
		list := obj.(*resourceapi.ResourceSliceList)
		list.Items = slices.DeleteFunc(list.Items, func(s resourceapi.ResourceSlice) bool { return !matches(sel, &s) })
		return true, list, nil
	})
	c.PrependWatchReactor("resourceslices", func(a k8stesting.Action) (bool, watch.Interface, error) {
		sel := selector(a.(k8stesting.WatchAction).GetWatchRestrictions().Fields)
		w, err := c.Tracker().Watch(a.GetResource(), "")
		if err != nil {
			return true, nil, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			s, ok := e.Object.(*resourceapi.ResourceSlice)
			return e, !ok || matches(sel, s)
		}), nil
	})
	return c
}

// imexPools lists the controller's pools: name → node selector values,
// devices, owner kind.
func imexPools(t *testing.T, c *fake.Clientset) map[string]string {
	t.Helper()
	list, err := c.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range list.Items {
		if s.Spec.NodeName != nil {
			continue
		}
		owner := "none"
		if len(s.OwnerReferences) == 1 {
			owner = s.OwnerReferences[0].Kind + "/" + s.OwnerReferences[0].Name
		}
		nodes := "none"
		if s.Spec.NodeSelector != nil {
			nodes = strings.Join(s.Spec.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0].Values, ",")
		}
		out[s.Spec.Pool.Name] = nodes + " " + owner + " " + strings.Repeat("d", len(s.Spec.Devices))
	}
	return out
}

func waitFor(t *testing.T, c *fake.Clientset, want map[string]string) {
	t.Helper()
	var got map[string]string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = imexPools(t, c); len(got) == len(want) {
			same := true
			for k, v := range want {
				same = same && got[k] == v
			}
			if same {
				return
			}
		}
	}
	t.Fatalf("IMEX pools %v, want %v", got, want)
}

func TestControllerPublishesCliquePools(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: DefaultDeviceClass, UID: "class-uid"}}
	n1, n2, n3 := nodeSlice("127.0.0.1", domain+".1", 4), nodeSlice("127.0.0.2", domain+".1", 4), nodeSlice("127.0.0.3", domain+".2", 4)
	c := fakeClient(class, &n1, &n2, &n3)
	cfg := DefaultConfig()
	cfg.Channels = 4
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, c) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	waitFor(t, c, map[string]string{
		"imex-1-5f0c6a7e": "127.0.0.1,127.0.0.2 DeviceClass/imex.gpu.drakit.dev dddd",
		"imex-2-5f0c6a7e": "127.0.0.3 DeviceClass/imex.gpu.drakit.dev dddd",
	})
	// A node joins clique 2; clique 1 loses both nodes.
	n4 := nodeSlice("127.0.0.4", domain+".2", 4)
	if _, err := c.ResourceV1().ResourceSlices().Create(ctx, &n4, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{n1.Name, n2.Name} {
		if err := c.ResourceV1().ResourceSlices().Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, c, map[string]string{"imex-2-5f0c6a7e": "127.0.0.3,127.0.0.4 DeviceClass/imex.gpu.drakit.dev dddd"})
	// The node slices are the kubelet plugins': the controller never touches them.
	list, _ := c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	nodes := 0
	for _, s := range list.Items {
		if s.Spec.NodeName != nil {
			nodes++
		}
	}
	if nodes != 2 {
		t.Errorf("%d node slices left, want 2 (127.0.0.3, 127.0.0.4)", nodes)
	}
}

func TestControllerNeedsItsDeviceClass(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	err := run(ctx, DefaultConfig(), fakeClient())
	if err == nil || !strings.Contains(err.Error(), "imex.gpu.drakit.dev") {
		t.Errorf("run without the DeviceClass: %v", err)
	}
}
