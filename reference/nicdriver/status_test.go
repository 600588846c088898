package nicdriver

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// TestStatuses: one entry per allocation result of the driver in its pool
// that prepare recorded, keyed with the result's shareID; other drivers'
// results, results of another pool and unrecorded ones get none.
func TestStatuses(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 10, 0, 0, 500, time.UTC)
	claim := harnesstest.AllocatedClaim("a", uidA,
		vfResult("vf", pf0Dv+"-vf0"),
		harnesstest.AllocResult("gpu.drakit.dev", testNode, "gpu", "gpu-0"),
		shareResult("net", pf0Dv, share1, "10G"),
		harnesstest.AllocResult(DefaultDriverName, "other-node", "vf", pf0Dv+"-vf1"),
		vfResult("unrecorded", pf0Dv+"-vf2"),
	)
	claim.Generation = 3
	idx := 0
	info := map[int]deviceStatus{
		0: vfStatus(&vfRecord{PF: pf0, Index: idx, BDF: "0000:3b:00.2", Interface: "ens1f0v0", MAC: "02:00:00:00:01:00",
			RDMADevice: "mlx5_2", Uverbs: "uverbs2"}),
		2: {data: deviceData{Type: deviceTypePF, PCIAddress: pf0, Bandwidth: "10G", LinkSpeed: "100G"}, iface: "ens1f0", mac: "b8:3f:d2:00:00:01", message: "m"},
		3: {data: deviceData{Type: deviceTypeVF}}, // another pool: not the driver's to report
	}
	got, err := statuses(claim, DefaultDriverName, testNode, info, map[string]string{pf0Dv + "-vf0": "192.0.2.10/24"}, now)
	if err != nil {
		t.Fatal(err)
	}
	ready := func(msg string) []metav1.Condition {
		return []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonPrepared, Message: msg,
			ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}}
	}
	want := []resourceapi.AllocatedDeviceStatus{
		{
			Driver: DefaultDriverName, Pool: testNode, Device: pf0Dv + "-vf0",
			Conditions: ready("VF 0 (0000:3b:00.2) of PF 0000:3b:00.0 is ready"),
			Data: &runtime.RawExtension{Raw: []byte(`{"type":"vf","pciAddress":"0000:3b:00.2","pfPCIAddress":"0000:3b:00.0","vfIndex":0,` +
				`"rdmaDevice":"mlx5_2","uverbsDevice":"/dev/infiniband/uverbs2"}`)},
			NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: "ens1f0v0", HardwareAddress: "02:00:00:00:01:00", IPs: []string{"192.0.2.10/24"}},
		},
		{
			Driver: DefaultDriverName, Pool: testNode, Device: pf0Dv, ShareID: ptr.To(share1),
			Conditions:  ready("m"),
			Data:        &runtime.RawExtension{Raw: []byte(`{"type":"pf","pciAddress":"0000:3b:00.0","bandwidth":"10G","linkSpeed":"100G"}`)},
			NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: "ens1f0", HardwareAddress: "b8:3f:d2:00:00:01"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	for _, e := range got {
		if len(e.Data.Raw) > 10*1024 || !json.Valid(e.Data.Raw) || e.Data.Raw[0] != '{' {
			t.Errorf("device %s: data %s is not a JSON object of at most 10 KiB", e.Device, e.Data.Raw)
		}
	}
}

// claimStatus reads the claim's status.devices from the client.
func (e *testEnv) claimStatus(t *testing.T, name string) []resourceapi.AllocatedDeviceStatus {
	t.Helper()
	c, err := e.client.ResourceV1().ResourceClaims("test").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Status.Devices
}

func deviceKeys(entries []resourceapi.AllocatedDeviceStatus) []string {
	var out []string
	for _, e := range entries {
		k := e.Driver + "/" + e.Pool + "/" + e.Device
		if e.ShareID != nil {
			k += "/" + *e.ShareID
		}
		out = append(out, k)
	}
	return out
}

// TestStatusWrittenAndRemoved: prepare writes the entries of exactly the
// claim's devices of this driver with server-side apply, leaving another
// driver's entry; unprepare removes the driver's entries only.
func TestStatusWrittenAndRemoved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.cfg.DeviceStatus = true
	e.cfg.DeviceIPs = map[string]string{pf0Dv + "-vf0": "192.0.2.10/24"}
	claim := harnesstest.AllocatedClaim("a", uidA,
		vfResult("vf", pf0Dv+"-vf0"),
		harnesstest.AllocResult("gpu.drakit.dev", testNode, "gpu", "gpu-0"),
		shareResult("net", pf0Dv, share1, "10G"))
	claim.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: "gpu.drakit.dev", Pool: testNode, Device: "gpu-0",
		Data: &runtime.RawExtension{Raw: []byte(`{"theirs":true}`)}}}
	e.client = fake.NewClientset(claim)
	p := e.start(t)
	prepareOK(t, p, claim)
	got := e.claimStatus(t, "a")
	want := []string{"gpu.drakit.dev/" + testNode + "/gpu-0", DefaultDriverName + "/" + testNode + "/" + pf0Dv + "-vf0",
		DefaultDriverName + "/" + testNode + "/" + pf0Dv + "/" + share1}
	if diff := cmp.Diff(want, deviceKeys(got)); diff != "" {
		t.Fatalf("status.devices (-want +got):\n%s", diff)
	}
	vf := got[1]
	if nd := vf.NetworkData; nd == nil || nd.InterfaceName != "ens1f0v0" || nd.HardwareAddress != "02:00:00:00:01:00" ||
		!cmp.Equal(nd.IPs, []string{"192.0.2.10/24"}) {
		t.Errorf("VF networkData %+v", vf.NetworkData)
	}
	if len(vf.Conditions) != 1 || vf.Conditions[0].Type != ConditionReady || vf.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("VF conditions %+v", vf.Conditions)
	}
	if share := got[2]; share.NetworkData == nil || share.NetworkData.InterfaceName != "ens1f0" || len(share.NetworkData.IPs) != 0 {
		t.Errorf("share networkData %+v: want the PF's interface and no IPs", share.NetworkData)
	}
	if string(got[0].Data.Raw) != `{"theirs":true}` {
		t.Errorf("the other driver's entry changed: %s", got[0].Data.Raw)
	}
	// Prepared again: the same entries.
	prepareOK(t, p, claim)
	if diff := cmp.Diff(want, deviceKeys(e.claimStatus(t, "a"))); diff != "" {
		t.Errorf("status.devices after a second prepare (-want +got):\n%s", diff)
	}
	harnesstest.Unprepare(t, p, uidA) // by UID alone: the claim's name is unknown, its status stays
	prepareOK(t, p, claim)
	unprepareNamed(t, p, claim)
	if diff := cmp.Diff(want[:1], deviceKeys(e.claimStatus(t, "a"))); diff != "" {
		t.Errorf("status.devices after unprepare (-want +got):\n%s", diff)
	}
}

func unprepareNamed(t *testing.T, p *plugin, claim *resourceapi.ResourceClaim) {
	t.Helper()
	obj := kubeletplugin.NamespacedObject{NamespacedName: types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}, UID: claim.UID}
	res, err := p.UnprepareResourceClaims(t.Context(), []kubeletplugin.NamespacedObject{obj})
	if err != nil || res[claim.UID] != nil {
		t.Fatalf("unprepare claim %s: %v, %v", claim.Name, err, res[claim.UID])
	}
}

// TestStatusWriteRefused: a status write the API server refuses fails the
// claim's prepare with the API's error; the devices stay prepared and a
// repeated prepare writes the status once it may.
func TestStatusWriteRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.cfg.DeviceStatus = true
	claim := harnesstest.AllocatedClaim("a", uidA, vfResult("vf", pf0Dv+"-vf0"))
	client := fake.NewClientset(claim)
	var refuse atomic.Bool
	refuse.Store(true)
	client.PrependReactor("patch", "resourceclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && refuse.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims/driver"}, "a", nil)
		}
		return false, nil, nil
	})
	e.client = client
	p := e.start(t)
	prepareErr(t, p, claim, "prepare claim test/a (aaaaaaaa-0000-0000-0000-000000000001): devices prepared, but write status.devices of claim test/a: ")
	if _, ok := e.checkpoint(t)[uidA]; !ok || e.fs.numVFs(pf0) != "4" {
		t.Errorf("the claim was not left prepared: checkpoint %v, sriov_numvfs %s", e.checkpoint(t), e.fs.numVFs(pf0))
	}
	refuse.Store(false)
	prepareOK(t, p, claim)
	if n := len(e.claimStatus(t, "a")); n != 1 {
		t.Errorf("%d status entries after the retry, want 1", n)
	}
}
