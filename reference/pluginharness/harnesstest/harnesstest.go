// Package harnesstest is the test scaffolding of drivers built on
// reference/pluginharness: allocated claims, prepare and unprepare calls
// with their checks, a fake clientset that names ResourceSlices as the API
// server does, and the kubelet's side of the registration and DRA sockets.
package harnesstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// AllocResult is one allocation result.
func AllocResult(driver, pool, request, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Driver: driver, Pool: pool, Request: request, Device: device}
}

// AllocatedClaim is a claim test/<name> with the UID and the allocation
// results.
func AllocatedClaim(name, uid string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: name, UID: types.UID(uid)},
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}},
		},
	}
}

// PrepareOne prepares one claim and returns its result; the call must
// succeed and return exactly that claim's result.
func PrepareOne(t testing.TB, p kubeletplugin.DRAPlugin, claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	t.Helper()
	res, err := p.PrepareResourceClaims(t.Context(), []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatalf("PrepareResourceClaims: %v", err)
	}
	if len(res) != 1 {
		t.Fatalf("PrepareResourceClaims returned %d results for 1 claim", len(res))
	}
	r, ok := res[claim.UID]
	if !ok {
		t.Fatalf("PrepareResourceClaims: no result for claim %s", claim.UID)
	}
	return r
}

// Prepare prepares claims in one call, which must succeed.
func Prepare(t testing.TB, p kubeletplugin.DRAPlugin, claims ...*resourceapi.ResourceClaim) map[types.UID]kubeletplugin.PrepareResult {
	t.Helper()
	res, err := p.PrepareResourceClaims(t.Context(), claims)
	if err != nil {
		t.Fatalf("PrepareResourceClaims: %v", err)
	}
	return res
}

// Unprepare unprepares the claims with these UIDs in one call, which must
// succeed with one result per claim.
func Unprepare(t testing.TB, p kubeletplugin.DRAPlugin, uids ...string) map[types.UID]error {
	t.Helper()
	var objs []kubeletplugin.NamespacedObject
	for _, uid := range uids {
		objs = append(objs, kubeletplugin.NamespacedObject{UID: types.UID(uid)})
	}
	res, err := p.UnprepareResourceClaims(t.Context(), objs)
	if err != nil {
		t.Fatalf("UnprepareResourceClaims: %v", err)
	}
	if len(res) != len(uids) {
		t.Fatalf("UnprepareResourceClaims returned %d results for %d claims", len(res), len(uids))
	}
	return res
}

// DirState is every file of a directory with its content, to compare
// states; a missing directory is empty.
func DirState(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

// FatalRecorder records the causes a plugin's HandleError stops the driver
// with; Cancel is its Fatal.
type FatalRecorder struct {
	mu     sync.Mutex
	causes []error
}

// Cancel records cause.
func (f *FatalRecorder) Cancel(cause error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.causes = append(f.causes, cause)
}

// Causes returns the recorded causes.
func (f *FatalRecorder) Causes() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.causes...)
}

// NewFakeClient is a fake clientset whose ResourceSlice creates honour
// generateName, as the API server does.
func NewFakeClient(objects ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objects...)
	var mu sync.Mutex
	n := 0
	client.PrependReactor("create", "resourceslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		slice := action.(k8stesting.CreateAction).GetObject().(*resourceapi.ResourceSlice)
		if slice.Name == "" && slice.GenerateName != "" {
			slice.Name = fmt.Sprintf("%s%d", slice.GenerateName, n)
			n++
		}
		return false, nil, nil
	})
	return client
}

// Dial connects to a unix socket, as the kubelet does; the connection is
// closed when the test ends.
func Dial(t testing.TB, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", socket, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// WaitForSlices lists the ResourceSlices until there is one, for at most
// 30 s, polling every interval; an error on errc (the driver's run
// returned) fails the test.
func WaitForSlices(t testing.TB, ctx context.Context, client *fake.Clientset, errc <-chan error, interval time.Duration) *resourceapi.ResourceSliceList {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(slices.Items) > 0 {
			return slices
		}
		select {
		case err := <-errc:
			t.Fatalf("run returned early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no ResourceSlice after 30s")
		}
		time.Sleep(interval)
	}
}

// StartRun runs run in a goroutine until the test ends; stop cancels it and
// returns run's error (and fails the test when run does not return within
// 30 s), errc receives run's error when it returns by itself.
func StartRun(t testing.TB, ctx context.Context, run func(context.Context) error) (stop func() error, errc <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan error, 1)
	go func() { ch <- run(ctx) }()
	stopped := false
	stop = func() error {
		t.Helper()
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-ch:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("run did not return 30s after cancel")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return stop, ch
}
