package nicdriver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/oracle/allocator/scenario"
)

const testNode = "node-1"

// publish discovers fs and builds the pool with perPF VFs per PF.
func publish(t *testing.T, fs *fakeSysfs, perPF int) ([]device, resourceslice.DriverResources) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	pfs, err := ScanPFs(ctx, fs.Root)
	if err != nil {
		t.Fatal(err)
	}
	devs := inventory(ctx, pfs, perPF)
	res, err := buildResources(testNode, devs)
	if err != nil {
		t.Fatal(err)
	}
	return devs, res
}

// wantPF and wantVF are the published PF share and first VF of the first
// standard PF, as YAML.
const wantPF = `allowMultipleAllocations: true
attributes:
  deviceID:
    string: "0x101d"
  interfaceName:
    string: ens1f0
  linkSpeed:
    int: 100000
  macAddress:
    string: b8:3f:d2:00:00:01
  mtu:
    int: 9000
  rdma:
    bool: true
  rdmaDevice:
    string: mlx5_0
  resource.kubernetes.io/numaNode:
    int: 0
  resource.kubernetes.io/pciBusID:
    string: 0000:3b:00.0
  resource.kubernetes.io/pcieRoot:
    string: pci0000:3a
  totalVFs:
    int: 8
  type:
    string: pf
  vendorID:
    string: "0x15b3"
capacity:
  bandwidth:
    requestPolicy:
      default: 1G
      validRange:
        max: 100G
        min: 1G
        step: 1G
    value: 100G
name: nic-0000-3b-00-0
`

const wantVF = `attributes:
  deviceID:
    string: "0x101e"
  pfDevice:
    string: nic-0000-3b-00-0
  pfInterfaceName:
    string: ens1f0
  pfPCIBusID:
    string: 0000:3b:00.0
  rdma:
    bool: true
  resource.kubernetes.io/numaNode:
    int: 0
  resource.kubernetes.io/pciBusID:
    string: 0000:3b:00.2
  resource.kubernetes.io/pcieRoot:
    string: pci0000:3a
  type:
    string: vf
  vendorID:
    string: "0x15b3"
  vfIndex:
    int: 0
name: nic-0000-3b-00-0-vf0
`

// TestPublish: one pool named after the node; per PF with a known link
// speed a share device, then VFsPerPF VFs (fewer when the PF has fewer);
// the devices as documented.
func TestPublish(t *testing.T) {
	t.Parallel()
	_, res := publish(t, newFakeSysfs(t, standardNICs()...), DefaultVFsPerPF)
	pool, ok := res.Pools[testNode]
	if !ok || len(res.Pools) != 1 {
		t.Fatalf("pools %v, want one named %s", res.Pools, testNode)
	}
	if len(pool.Slices) != 1 {
		t.Fatalf("%d slices, want 1", len(pool.Slices))
	}
	var names []string
	for _, d := range pool.Slices[0].Devices {
		names = append(names, d.Name)
	}
	wantNames := []string{
		"nic-0000-3b-00-0", "nic-0000-3b-00-0-vf0", "nic-0000-3b-00-0-vf1", "nic-0000-3b-00-0-vf2", "nic-0000-3b-00-0-vf3",
		"nic-0000-3b-00-1", "nic-0000-3b-00-1-vf0", "nic-0000-3b-00-1-vf1", "nic-0000-3b-00-1-vf2", "nic-0000-3b-00-1-vf3",
		// Link down: no share device; 2 VFs is all the PF has.
		"nic-0000-86-00-0-vf0", "nic-0000-86-00-0-vf1",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	for i, want := range map[int]string{0: wantPF, 1: wantVF} {
		got, err := yaml.Marshal(pool.Slices[0].Devices[i])
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("device %s (-want +got):\n%s", pool.Slices[0].Devices[i].Name, diff)
		}
	}
	// The second PF's VFs start at offset 1; the Intel PF's VFs have its
	// own device id and no RDMA.
	vf := pool.Slices[0].Devices[6]
	if got := *vf.Attributes["resource.kubernetes.io/pciBusID"].StringValue; got != "0000:3b:00.2" {
		t.Errorf("VF 0 of 0000:3b:00.1 has pciBusID %s, want 0000:3b:00.2 (offset 1)", got)
	}
	intel := pool.Slices[0].Devices[10]
	if *intel.Attributes["deviceID"].StringValue != "0x1889" || *intel.Attributes["rdma"].BoolValue ||
		*intel.Attributes["resource.kubernetes.io/pcieRoot"].StringValue != "pci0000:85" || *intel.Attributes["resource.kubernetes.io/numaNode"].IntValue != 1 {
		t.Errorf("Intel VF attributes %v", intel.Attributes)
	}
}

// TestPublishVFCount: VFsPerPF 0 publishes no VFs; a PF with VFs the
// driver did not create publishes those only.
func TestPublishVFCount(t *testing.T) {
	t.Parallel()
	nic := standardNICs()[0]
	devs, _ := publish(t, newFakeSysfs(t, nic), 0)
	if len(devs) != 1 || devs[0].Kind != kindPF {
		t.Errorf("VFsPerPF 0: devices %v, want the PF share only", devs)
	}
	nic.NumVFs = 2
	devs, _ = publish(t, newFakeSysfs(t, nic), 4)
	if len(devs) != 3 || devs[2].Name != "nic-0000-3b-00-0-vf1" || devs[2].Count != 2 {
		t.Errorf("2 existing VFs, VFsPerPF 4: devices %+v, want the PF share and vf0, vf1", devs)
	}
	nic.NumVFs, nic.TotalVFs = 0, 3
	devs, _ = publish(t, newFakeSysfs(t, nic), 4)
	if len(devs) != 4 || devs[3].Count != 3 {
		t.Errorf("sriov_totalvfs 3, VFsPerPF 4: devices %+v, want the PF share and 3 VFs", devs)
	}
}

// TestPublishRespectsAPILimits: a node with many NICs is split into slices
// of at most 128 devices, and every slice passes the API's limits and
// rules as the reference allocator's scenario validation checks them.
func TestPublishRespectsAPILimits(t *testing.T) {
	t.Parallel()
	var nics []fakeNIC
	for i := range 30 {
		nics = append(nics, fakeNIC{BDF: fmt.Sprintf("0000:%02x:00.0", 0x40+i), Bridge: fmt.Sprintf("0000:%02x:00.0", 0x40+i),
			TotalVFs: 8, Iface: fmt.Sprintf("eth%d", i), Speed: "200000", RDMA: fmt.Sprintf("mlx5_%d", i), Uverbs: i, Driver: "mlx5_core"})
	}
	_, res := publish(t, newFakeSysfs(t, nics...), 8)
	slices := res.Pools[testNode].Slices
	if len(slices) != 3 || len(slices[0].Devices) != 128 || len(slices[1].Devices) != 128 || len(slices[2].Devices) != 30*9-256 {
		t.Fatalf("slices of %d, %d, %d devices, want 128, 128, %d", len(slices[0].Devices), len(slices[1].Devices), len(slices[2].Devices), 30*9-256)
	}
	s := testScenario(res)
	s.Default()
	if errs := s.Validate(); len(errs) > 0 {
		t.Errorf("the published slices are invalid: %v", errs.ToAggregate())
	}
	for _, sl := range slices {
		for _, d := range sl.Devices {
			for name, c := range d.Capacity {
				if errs := checkRequestPolicy(d.AllowMultipleAllocations, c); len(errs) > 0 {
					t.Errorf("device %s capacity %s: %v", d.Name, name, errs)
				}
			}
		}
	}
}

// testScenario is the node's published slices, the driver's DeviceClasses
// (as reference/deploy's manifests select) and no claims.
func testScenario(res resourceslice.DriverResources) *scenario.Scenario {
	s := &scenario.Scenario{
		Features: scenario.Features{ConsumableCapacity: true, PrioritizedList: true, AdminAccess: true},
		Node:     &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{"kubernetes.io/hostname": testNode}}},
		DeviceClasses: []*resourceapi.DeviceClass{
			testClass("nic.drakit.dev", deviceTypePF), testClass("vf.nic.drakit.dev", deviceTypeVF),
		},
	}
	pool := res.Pools[testNode]
	for i, sl := range pool.Slices {
		s.ResourceSlices = append(s.ResourceSlices, &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", testNode, DefaultDriverName, i)},
			Spec: resourceapi.ResourceSliceSpec{
				Driver:   DefaultDriverName,
				Pool:     resourceapi.ResourcePool{Name: testNode, ResourceSliceCount: int64(len(pool.Slices))},
				NodeName: ptr.To(testNode),
				Devices:  sl.Devices,
			},
		})
	}
	return s
}

func testClass(name, typ string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.driver == %q && device.attributes[%q].type == %q`, DefaultDriverName, DefaultDriverName, typ),
		}}}},
	}
}

// checkRequestPolicy checks a capacity's request policy against the API
// server's rules (dra-1.37-spec.md §7, behaviours 1-4; integer quantities,
// so DRAFractionalCapacityRange makes no difference).
func checkRequestPolicy(allowMultiple *bool, c resourceapi.DeviceCapacity) []string {
	p := c.RequestPolicy
	if p == nil {
		return nil
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if !ptr.Deref(allowMultiple, false) {
		bad("requestPolicy without allowMultipleAllocations: true")
	}
	if c.Value.Sign() < 0 {
		bad("negative capacity %s", c.Value.String())
	}
	switch {
	case (p.ValidValues != nil) == (p.ValidRange != nil):
		bad("exactly one of validValues and validRange must be set")
	case p.Default == nil:
		bad("default is required")
	case p.ValidRange != nil:
		r := p.ValidRange
		if r.Min == nil {
			bad("validRange.min is required")
			break
		}
		val, def, minV := c.Value.Value(), p.Default.Value(), r.Min.Value()
		if minV < 0 || def < 0 {
			bad("negative min %d or default %d", minV, def)
		}
		if minV > val {
			bad("min %d > capacity %d", minV, val)
		}
		if def < minV {
			bad("default %d < min %d", def, minV)
		}
		if r.Max != nil {
			maxV := r.Max.Value()
			if maxV < minV || maxV > val || def > maxV {
				bad("max %d not within min %d, capacity %d, default %d", maxV, minV, val, def)
			}
		}
		if r.Step != nil {
			step := r.Step.Value()
			if step <= 0 {
				bad("step %d not positive", step)
				break
			}
			if minV+step > val {
				bad("min %d + step %d > capacity %d", minV, step, val)
			}
			if r.Max != nil && (r.Max.Value()-minV)%step != 0 {
				bad("max %d is not a multiple of step %d from min %d", r.Max.Value(), step, minV)
			}
			if (def-minV)%step != 0 {
				bad("default %d is not a multiple of step %d from min %d", def, step, minV)
			}
		}
	}
	return errs
}

// TestBandwidthPolicy: the policy is valid for every usual link speed and
// for odd ones; links too slow for two steps get none.
func TestBandwidthPolicy(t *testing.T) {
	t.Parallel()
	for _, mbps := range []int64{1, 2, 3, 10, 100, 999, 1000, 1500, 2500, 5000, 10000, 25000, 40000, 50000, 100000, 200000, 400000, 800000} {
		bw := mbps * 1_000_000
		p := bandwidthPolicy(bw)
		if mbps < 2 {
			if p != nil {
				t.Errorf("%d Mb/s: policy %v, want none", mbps, p)
			}
			continue
		}
		c := resourceapi.DeviceCapacity{Value: *resource.NewQuantity(bw, resource.DecimalSI), RequestPolicy: p}
		if errs := checkRequestPolicy(ptr.To(true), c); len(errs) > 0 {
			t.Errorf("%d Mb/s: %v", mbps, errs)
		}
		if p.ValidRange.Max.Value() != bw {
			t.Errorf("%d Mb/s: max %s, want the link", mbps, p.ValidRange.Max)
		}
		if want := min(int64(1_000_000_000), bw) / p.ValidRange.Step.Value() * p.ValidRange.Step.Value(); p.Default.Value() != want {
			t.Errorf("%d Mb/s: default %s, want %d", mbps, p.Default, want)
		}
	}
	if got := bandwidthPolicy(25_000_000_000); got.ValidRange.Step.String() != "1G" || got.Default.String() != "1G" {
		t.Errorf("25G: step %s default %s, want 1G and 1G", got.ValidRange.Step, got.Default)
	}
	if got := bandwidthPolicy(2_500_000_000); got.ValidRange.Step.String() != "100M" {
		t.Errorf("2.5G: step %s, want 100M", got.ValidRange.Step)
	}
}

// TestCheckRequestPolicyCatchesBadPolicies keeps the checker honest.
func TestCheckRequestPolicyCatchesBadPolicies(t *testing.T) {
	t.Parallel()
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	for _, tc := range []struct {
		name     string
		multiple bool
		policy   resourceapi.CapacityRequestPolicy
		want     string
	}{
		{"not multiple", false, resourceapi.CapacityRequestPolicy{Default: q("1G"), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q("1G")}}, "allowMultipleAllocations"},
		{"no default", true, resourceapi.CapacityRequestPolicy{ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q("1G")}}, "default is required"},
		{"max above capacity", true, resourceapi.CapacityRequestPolicy{Default: q("1G"), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q("1G"), Max: q("20G")}}, "max"},
		{"max off step", true, resourceapi.CapacityRequestPolicy{Default: q("1G"), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q("1G"), Max: q("10G"), Step: q("2G")}}, "multiple of step"},
		{"min+step above capacity", true, resourceapi.CapacityRequestPolicy{Default: q("6G"), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q("6G"), Step: q("6G")}}, "min 6000000000 + step"},
	} {
		c := resourceapi.DeviceCapacity{Value: resource.MustParse("10G"), RequestPolicy: &tc.policy}
		errs := checkRequestPolicy(&tc.multiple, c)
		if !strings.Contains(strings.Join(errs, "; "), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, errs, tc.want)
		}
	}
}
