package poolstatus

import (
	"context"
	"strings"
	"testing"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/kit"
	resourcealpha "k8s.io/api/resource/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// TestPoolStatusOfDriverAgainstAFakeController runs the step on a fake API
// server whose "controller" answers each request as it is created: a
// correct answer passes, one that misses the allocated device fails with
// the count, and the ledger deletes every request the step created.
func TestPoolStatusOfDriverAgainstAFakeController(t *testing.T) {
	t.Parallel()
	for name, allocated := range map[string]int32{"correct": 1, "misses the allocation": 0} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			slice := psSlice("node-1", 1, 1, "node-1", psDevice("gpu-0"), psDevice("gpu-1"))
			slice.Name = "s"
			claim := psClaim(false, [2]string{"node-1", "gpu-0"})
			claim.ObjectMeta = metav1.ObjectMeta{Name: "c", Namespace: "ns"}
			kube := fake.NewClientset(&slice, &claim)
			kube.PrependReactor("create", "resourcepoolstatusrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
				r := a.(k8stesting.CreateAction).GetObject().(*resourcealpha.ResourcePoolStatusRequest)
				r.Status = &resourcealpha.ResourcePoolStatusRequestStatus{
					PoolCount: ptr.To[int32](1),
					Pools: []resourcealpha.PoolStatus{{Driver: psDriver, PoolName: "node-1", Generation: 1, NodeName: ptr.To("node-1"),
						ResourceSliceCount: ptr.To[int32](1), TotalDevices: ptr.To[int32](2), AllocatedDevices: ptr.To(allocated),
						UnavailableDevices: ptr.To[int32](0), AvailableDevices: ptr.To(2 - allocated)}},
					Conditions: []metav1.Condition{{Type: "Complete", Status: metav1.ConditionTrue, Reason: "CalculationComplete"}},
				}
				return false, nil, nil
			})
			w := &world{World: kit.NewWorld(kit.Config{Declaration: &declaration.Declaration{Driver: declaration.Driver{Name: psDriver}}}, kube, "drakit-abcde")}
			err := w.poolStatusOfDriver(context.Background())
			if allocated == 1 && err != nil {
				t.Fatalf("poolStatusOfDriver with a correct answer: %v", err)
			}
			if allocated == 0 && (err == nil || !strings.Contains(err.Error(), "allocatedDevices 0, the stored objects give 1")) {
				t.Fatalf("poolStatusOfDriver with an answer that misses the allocation: %v", err)
			}
			if !w.Ledger.Has(kit.KindPoolStatusRequest) {
				t.Fatal("the step did not record its request in the ledger")
			}
			if err := kit.CleanupNamespace(context.Background(), kube, w.Ns, w.Ledger, kit.Timeouts{}); err != nil {
				t.Fatalf("cleanup: %v", err)
			}
			left, err := kube.ResourceV1alpha3().ResourcePoolStatusRequests().List(context.Background(), metav1.ListOptions{})
			if err != nil || len(left.Items) != 0 {
				t.Errorf("requests left after cleanup: %v, %v", left, err)
			}
		})
	}
}
