package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const driver = "gpu.example.com"

func str(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }
func num(n int64) resourceapi.DeviceAttribute  { return resourceapi.DeviceAttribute{IntValue: &n} }

var node = corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: types.UID("node-uid")}}

// slice is slice name of pool p (generation 1, count slices) for node n1,
// owned by it.
func slice(name, p string, count int64, devs ...resourceapi.Device) resourceapi.ResourceSlice {
	return resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid", Controller: ptr.To(true)}}},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, Pool: resourceapi.ResourcePool{Name: p, Generation: 1, ResourceSliceCount: count},
			NodeName: ptr.To("n1"), Devices: devs},
	}
}

func gpu(name, uuid, busID string, numa int64) resourceapi.Device {
	return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"uuid": str(uuid), attrPCIBusID: str(busID), attrPCIeRoot: str("pci0000:00"), attrNUMANode: num(numa),
	}, Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("40Gi")}}}
}

// good is a well-formed pool of two GPUs and a partitionable one.
func good() Input {
	counters := slice("s-counters", "n1", 2)
	counters.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-2", Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("40Gi")}}}}
	part := resourceapi.Device{Name: "gpu-2-half", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"parentUUID": str("GPU-2")},
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-2", Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("20Gi")}}}}}
	return Input{Driver: driver, Identity: "uuid", Nodes: []corev1.Node{node}, Slices: []resourceapi.ResourceSlice{
		slice("s-devices", "n1", 2, gpu("gpu-0", "GPU-0", "0000:07:00.0", 0), gpu("gpu-1", "GPU-1", "0000:0f:00.0", 0), part),
		counters,
	}}
}

func TestRulesPassAWellFormedPool(t *testing.T) {
	t.Parallel()
	in := good()
	for name, rule := range Rules {
		if got := rule(in); len(got) != 0 {
			t.Errorf("rule %s: %v", name, got)
		}
	}
}

// TestEachRuleCanFail breaks the good pool once per rule and wants that
// rule's finding, naming the pool, slice and device.
func TestEachRuleCanFail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule   string
		break_ func(in *Input)
		want   string
		// warning: no KEP or API requires what the break breaks.
		warning bool
	}{
		{RulePools, func(in *Input) { in.Slices[1].Spec.Pool.ResourceSliceCount = 3 },
			"pool n1, ResourceSlice s-devices: resourceSliceCount is 2, ResourceSlice s-counters of the same generation says 3", false},
		{RulePools, func(in *Input) { in.Slices = in.Slices[:1] },
			"pool n1: generation 1 has 1 slices, its resourceSliceCount is 2: the pool is incomplete", false},
		{RulePools, func(in *Input) { in.Slices[1].Spec.Devices = []resourceapi.Device{{Name: "gpu-0"}} },
			"pool n1, ResourceSlice s-devices, device gpu-0: the device name is also in ResourceSlice s-counters of the pool", false},
		{RulePools, func(in *Input) { in.Slices[1].OwnerReferences = nil },
			"pool n1, ResourceSlice s-devices: owned by Node n1, ResourceSlice s-counters of the pool by nobody: a pool has one owner", true},
		{RuleStandardAttributes, func(in *Input) { in.Slices[0].Spec.Devices[0].Attributes[attrNUMANode] = str("0") },
			`pool n1, ResourceSlice s-devices, device gpu-0: resource.kubernetes.io/numaNode is the string "0", want a non-negative int`, false},
		{RuleStandardAttributes, func(in *Input) { in.Slices[0].Spec.Devices[0].Attributes[attrPCIBusID] = str("07:00.0") },
			`pool n1, ResourceSlice s-devices, device gpu-0: resource.kubernetes.io/pciBusID is the string "07:00.0", want a string <domain>:<bus>:<device>.<function>`, false},
		{RuleStandardAttributes, func(in *Input) {
			in.Slices[0].Spec.Devices[1].Attributes["resource.kubernetes.io/gpuModel"] = str("A100")
		},
			"pool n1, ResourceSlice s-devices, device gpu-1: resource.kubernetes.io/gpuModel is not a standard attribute", true},
		{RuleQualifiedNames, func(in *Input) {
			in.OtherDrivers = []string{"nic.example.com"}
			in.Slices[0].Spec.Devices[1].Attributes["nic.example.com/rdma"] = resourceapi.DeviceAttribute{BoolValue: ptr.To(true)}
		}, "pool n1, ResourceSlice s-devices, device gpu-1: attribute nic.example.com/rdma is in domain nic.example.com, driver nic.example.com's", true},
		{RuleIdentity, func(in *Input) { in.Slices[0].Spec.Devices[1].Attributes["uuid"] = str("GPU-0") },
			`pool n1, ResourceSlice s-devices, device gpu-1: gpu.example.com/uuid "GPU-0" is also the identity of device n1/gpu-0`, false},
		{RuleNodeSelection, func(in *Input) { in.Nodes = nil },
			"pool n1, ResourceSlice s-counters: nodeName n1 names no Node of the cluster", false},
		{RuleNodeSelection, func(in *Input) { in.Nodes[0].UID = "new-uid" },
			"pool n1, ResourceSlice s-counters: for node n1 but not owned by that Node (owner Node n1): it outlives the node", true},
		{RuleCounters, func(in *Input) { in.Slices[0].Spec.Devices[2].ConsumesCounters[0].CounterSet = "gpu-9" },
			"pool n1, ResourceSlice s-devices, device gpu-2-half: consumes counter set gpu-9, which no slice of the pool declares", false},
		{RuleCounters, func(in *Input) {
			in.Slices[0].Spec.Devices[2].ConsumesCounters[0].Counters["memory"] = resourceapi.Counter{Value: resource.MustParse("80Gi")}
		}, "pool n1, ResourceSlice s-devices, device gpu-2-half: consumes 80Gi of counter memory, counter set gpu-2 holds 40Gi: it can never be allocated", false},
		{RuleCounters, func(in *Input) {
			in.Slices[0].Spec.Devices[2].ConsumesCounters[0].Counters["engines"] = resourceapi.Counter{Value: resource.MustParse("1")}
		}, "pool n1, ResourceSlice s-devices, device gpu-2-half: consumes counter engines, which counter set gpu-2 lacks", false},
	}
	for _, tc := range tests {
		in := good()
		in.Nodes = []corev1.Node{*node.DeepCopy()}
		tc.break_(&in)
		var got []string
		found := false
		for _, f := range Rules[tc.rule](in) {
			got = append(got, f.String())
			found = found || f.Rule == tc.rule && f.Warning == tc.warning && citesBasis(f) &&
				strings.HasPrefix(f.String(), "rule "+tc.rule+" ("+f.Basis+"): "+tc.want)
		}
		if !found {
			t.Errorf("rule %s: %q, want a finding (warning %t) citing its rule and basis, then %q", tc.rule, got, tc.warning, tc.want)
		}
	}
}

// citesBasis says whether a finding cites a KEP or the declaration, and a
// warning says that it has no such basis.
func citesBasis(f Finding) bool {
	if f.Warning {
		return strings.HasPrefix(f.Basis, NoBasis+": ")
	}
	return kepOrDeclaration.MatchString(f.Basis)
}

var kepOrDeclaration = regexp.MustCompile(`^(KEP-[0-9]+|the declaration)`)

// sysfsNode renders a kernel-shaped sysfs with two NVIDIA 3D controllers
// under pci0000:00 (NUMA 0) and one NIC.
func sysfsNode(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	add := func(root, bridge, addr, vendor, class, numa string) {
		real := filepath.Join(root, "devices", "pci0000:00", bridge, addr)
		if err := os.MkdirAll(real, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, v := range map[string]string{"vendor": vendor, "class": class, "numa_node": numa} {
			if err := os.WriteFile(filepath.Join(real, f), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		link := filepath.Join(root, "bus", "pci", "devices", addr)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", "..", "..", "devices", "pci0000:00", bridge, addr), link); err != nil {
			t.Fatal(err)
		}
	}
	add(root, "0000:00:01.0", "0000:07:00.0", "0x10de", "0x030200", "0")
	add(root, "0000:00:02.0", "0000:0f:00.0", "0x10de", "0x030200", "0")
	add(root, "0000:00:03.0", "0000:1a:00.0", "0x15b3", "0x020000", "0")
	return root
}

// TestNUMANode breaks the numaNode and pcieRoot of good()'s GPUs one way
// at a time; sysfs puts both on NUMA node 0, or, where numaNone, on none.
func TestNUMANode(t *testing.T) {
	t.Parallel()
	sysfs := sysfsNode(t)
	kind := PCIKind{Vendor: "10de", Class: "0302"}
	isGPU := func(_, device string) bool { return device != "gpu-2-half" }
	check := func(in Input, sysfs string) []Finding {
		t.Helper()
		got, err := NUMANode(in, "n1", sysfs, kind, isGPU)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := check(good(), sysfs); len(got) != 0 {
		t.Fatalf("the node's GPUs as published: %v", got)
	}
	list := good()
	list.Slices[0].Spec.Devices[0].Attributes[attrNUMANode] = resourceapi.DeviceAttribute{IntValues: []int64{0, 1}}
	if got := check(list, sysfs); len(got) != 0 {
		t.Errorf("numaNode [0 1], own node first: %v", got)
	}
	none := sysfsNode(t)
	if err := os.WriteFile(filepath.Join(none, "bus", "pci", "devices", "0000:07:00.0", "numa_node"), []byte("-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	omitted := good()
	delete(omitted.Slices[0].Spec.Devices[0].Attributes, attrNUMANode)
	if got := check(omitted, none); len(got) != 0 {
		t.Errorf("no numaNode where sysfs says -1: %v", got)
	}
	for _, tc := range []struct {
		break_ func(in *Input)
		sysfs  string
		want   string
	}{
		{func(in *Input) { in.Slices[0].Spec.Devices[0].Attributes[attrNUMANode] = num(1) }, sysfs,
			"pool n1, ResourceSlice s-devices, device gpu-0: resource.kubernetes.io/numaNode is 1, the node's sysfs says 0000:07:00.0 is on NUMA node 0"},
		{func(in *Input) {
			in.Slices[0].Spec.Devices[0].Attributes[attrNUMANode] = resourceapi.DeviceAttribute{IntValues: []int64{1, 0}}
		}, sysfs,
			"pool n1, ResourceSlice s-devices, device gpu-0: resource.kubernetes.io/numaNode is [1 0], whose first element must be the device's own NUMA node"},
		{func(in *Input) { delete(in.Slices[0].Spec.Devices[1].Attributes, attrNUMANode) }, sysfs,
			"pool n1, ResourceSlice s-devices, device gpu-1: publishes no resource.kubernetes.io/numaNode, the node's sysfs puts 0000:0f:00.0 on NUMA node 0"},
		{func(*Input) {}, none,
			"pool n1, ResourceSlice s-devices, device gpu-0: resource.kubernetes.io/numaNode is the int 0, but the node's sysfs puts 0000:07:00.0 on no NUMA node"},
		{func(in *Input) { in.Slices[0].Spec.Devices[0].Attributes[attrPCIeRoot] = str("pci0001:00") }, sysfs,
			"pool n1, ResourceSlice s-devices, device gpu-0: resource.kubernetes.io/pcieRoot is pci0001:00, outside the PCI domain 0000"},
	} {
		in := good()
		tc.break_(&in)
		got := check(in, tc.sysfs)
		found := false
		for _, f := range got {
			found = found || citesBasis(f) && !f.Warning && strings.HasPrefix(f.String(), "rule "+f.Rule+" ("+f.Basis+"): "+tc.want)
		}
		if !found {
			t.Errorf("findings %v, want one starting %q", got, tc.want)
		}
	}
}

func TestInventory(t *testing.T) {
	t.Parallel()
	sysfs := sysfsNode(t)
	kind := PCIKind{Vendor: "10de", Class: "0302"}
	isGPU := func(_, device string) bool { return device != "gpu-2-half" }
	in := good()
	got, err := Inventory(in, "n1", sysfs, kind, isGPU)
	if err != nil || len(got) != 0 {
		t.Fatalf("the node's GPUs as published: %v, %v", got, err)
	}
	for _, tc := range []struct {
		break_ func(in *Input)
		want   string
	}{
		{func(in *Input) { in.Slices[0].Spec.Devices = in.Slices[0].Spec.Devices[1:] },
			"node n1 has PCI function 0000:07:00.0 (vendor 10de class 0302*), no device of the driver publishes it"},
		{func(in *Input) { in.Slices[0].Spec.Devices[1].Attributes[attrPCIBusID] = str("0000:1a:00.0") },
			"pool n1, ResourceSlice s-devices, device gpu-1: resource.kubernetes.io/pciBusID is 0000:1a:00.0, which the node has no PCI function of vendor 10de class 0302* at"},
		{func(in *Input) { in.Slices[0].Spec.Devices[0].Attributes[attrPCIeRoot] = str("pci0000:80") },
			"pool n1, ResourceSlice s-devices, device gpu-0: resource.kubernetes.io/pcieRoot is pci0000:80, the node's sysfs puts 0000:07:00.0 under pci0000:00"},
		{func(in *Input) { delete(in.Slices[0].Spec.Devices[0].Attributes, attrPCIBusID) },
			"pool n1, ResourceSlice s-devices, device gpu-0: publishes no resource.kubernetes.io/pciBusID"},
	} {
		in := good()
		tc.break_(&in)
		got, err := Inventory(in, "n1", sysfs, kind, isGPU)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range got {
			found = found || citesBasis(f) && !f.Warning && strings.HasPrefix(f.String(), "rule "+f.Rule+" ("+f.Basis+"): "+tc.want)
		}
		if !found {
			t.Errorf("findings %v, want one starting %q", got, tc.want)
		}
	}
	if _, err := Inventory(in, "n1", t.TempDir(), kind, isGPU); err == nil {
		t.Error("a sysfs without PCI devices: no error")
	}
}

func TestRuleNames(t *testing.T) {
	if got := fmt.Sprint(RuleNames()); got != "[counters identity inventory node-selection numa-node pools qualified-names standard-attributes]" {
		t.Errorf("rules %s", got)
	}
}
