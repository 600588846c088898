package podresources

import (
	"strings"
	"testing"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

func claimResource(driver, pool, device string, ids ...string) *podresourcesv1.ClaimResource {
	cr := &podresourcesv1.ClaimResource{DriverName: driver, PoolName: pool, DeviceName: device}
	for _, id := range ids {
		cr.CdiDevices = append(cr.CdiDevices, &podresourcesv1.CDIDevice{Name: id})
	}
	return cr
}

func TestCheckDynamicResources(t *testing.T) {
	want := []wantClaim{{
		Name: "gpu", namespace: "ns",
		devices: map[string]bool{"d/p/gpu-0": true, "d/p/gpu-1": true},
		cdi:     map[string][]string{"d/p/gpu-0": {"d/gpu=a"}, "d/p/gpu-1": {"d/gpu=b"}},
	}}
	defined := func(id string) bool { return id != "d/gpu=undefined" }
	ctr := func(crs ...*podresourcesv1.ClaimResource) *podresourcesv1.ContainerResources {
		return &podresourcesv1.ContainerResources{Name: "probe", DynamicResources: []*podresourcesv1.DynamicResource{{ClaimName: "gpu", ClaimNamespace: "ns", ClaimResources: crs}}}
	}
	tests := map[string]struct {
		ctr  *podresourcesv1.ContainerResources
		want []string // substrings of the findings, in order
	}{
		"exact": {ctr(claimResource("d", "p", "gpu-0", "d/gpu=a"), claimResource("d", "p", "gpu-1", "d/gpu=b")), nil},
		// 1.37's kubelet carries a device's CDI devices over to the next device of the driver.
		"carried over":   {ctr(claimResource("d", "p", "gpu-0", "d/gpu=a"), claimResource("d", "p", "gpu-1", "d/gpu=a", "d/gpu=b")), nil},
		"missing device": {ctr(claimResource("d", "p", "gpu-0", "d/gpu=a")), []string{"allocated device d/p/gpu-1 is not reported"}},
		"foreign device": {ctr(claimResource("d", "p", "gpu-0", "d/gpu=a"), claimResource("d", "p", "gpu-1", "d/gpu=b"), claimResource("d", "p", "gpu-7")),
			[]string{"device d/p/gpu-7 is reported, but not allocated"}},
		"missing CDI device": {ctr(claimResource("d", "p", "gpu-0"), claimResource("d", "p", "gpu-1", "d/gpu=b")), []string{"CDI device d/gpu=a, which the driver prepared for it, is not reported"}},
		"foreign CDI device": {ctr(claimResource("d", "p", "gpu-0", "d/gpu=a", "d/gpu=z"), claimResource("d", "p", "gpu-1", "d/gpu=b")), []string{"CDI device d/gpu=z is reported, but the driver prepared no such CDI device"}},
		"no claim":           {&podresourcesv1.ContainerResources{Name: "probe"}, []string{"claim ns/gpu is not reported"}},
		"other claim": {&podresourcesv1.ContainerResources{Name: "probe", DynamicResources: []*podresourcesv1.DynamicResource{
			{ClaimName: "gpu", ClaimNamespace: "ns", ClaimResources: []*podresourcesv1.ClaimResource{claimResource("d", "p", "gpu-0", "d/gpu=a"), claimResource("d", "p", "gpu-1", "d/gpu=b")}},
			{ClaimName: "other", ClaimNamespace: "ns"}}}, []string{"claim ns/other is reported, but the container does not use it"}},
	}
	for name, tc := range tests {
		got := checkDynamicResources("pod", tc.ctr, want, defined)
		if len(got) != len(tc.want) {
			t.Errorf("%s: findings %q, want %d", name, got, len(tc.want))
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tc.want[i]) {
				t.Errorf("%s: finding %q, want it to say %q", name, got[i], tc.want[i])
			}
		}
	}
	undefined := []wantClaim{{Name: "gpu", namespace: "ns", devices: map[string]bool{"d/p/gpu-0": true}, cdi: map[string][]string{"d/p/gpu-0": {"d/gpu=undefined"}}}}
	got := checkDynamicResources("pod", ctr(claimResource("d", "p", "gpu-0", "d/gpu=undefined")), undefined, defined)
	if len(got) != 1 || !strings.Contains(got[0], "is in no CDI spec of the node") {
		t.Errorf("undefined CDI device: findings %q", got)
	}
}
