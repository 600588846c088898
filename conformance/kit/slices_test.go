package kit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const testDriver = "gpu.drakit.dev"

type attrs = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute

func gpu(name, uuid string, numa int64) resourceapi.Device {
	return resourceapi.Device{Name: name, Attributes: attrs{
		"uuid":                            {StringValue: ptr.To(uuid)},
		"resource.kubernetes.io/numaNode": {IntValue: ptr.To(numa)},
	}}
}

func slice(name, driver, node, pool string, generation int64, devices ...resourceapi.Device) resourceapi.ResourceSlice {
	s := resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:  driver,
			Pool:    resourceapi.ResourcePool{Name: pool, Generation: generation, ResourceSliceCount: 1},
			Devices: devices,
		},
	}
	if node != "" {
		s.Spec.NodeName = ptr.To(node)
	} else {
		s.Spec.AllNodes = ptr.To(true)
	}
	return s
}

func TestPublishedDevices(t *testing.T) {
	t.Parallel()
	slices := []resourceapi.ResourceSlice{
		slice("b-new", testDriver, "node-b", "node-b", 2, gpu("gpu-1", "GPU-b1", 0)),
		slice("b-old", testDriver, "node-b", "node-b", 1, gpu("gpu-0", "GPU-b0-stale", 0)),
		slice("a", testDriver, "node-a", "node-a", 1, gpu("gpu-1", "GPU-a1", 1), gpu("gpu-0", "GPU-a0", 0)),
		slice("other", "net.example.com", "node-a", "node-a", 5, gpu("nic-0", "NIC", 0)),
		slice("shared", testDriver, "", "fabric", 1, gpu("switch-0", "SW", 0)),
	}
	var got []string
	for _, d := range publishedDevices(slices, testDriver) {
		got = append(got, d.Node+" "+d.ID())
	}
	want := []string{"(all nodes) fabric/switch-0", "node-a node-a/gpu-0", "node-a node-a/gpu-1", "node-b node-b/gpu-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	devices := publishedDevices(slices, testDriver)
	if n := MaxDevicesOnOneNode(devices); n != 3 {
		t.Errorf("maxDevicesOnOneNode = %d, want 3 (node-a's 2 plus 1 for all nodes)", n)
	}
	if _, ok := FindDevice(devices, "node-b", "gpu-0"); ok {
		t.Error("findDevice found a device of an outdated pool generation")
	}
	if d, ok := FindDevice(devices, "node-a", "gpu-1"); !ok || *d.Attributes["uuid"].StringValue != "GPU-a1" {
		t.Errorf("findDevice(node-a, gpu-1) = %+v, %t", d, ok)
	}
}

func TestDevicesSharingAttribute(t *testing.T) {
	t.Parallel()
	devices := publishedDevices([]resourceapi.ResourceSlice{
		slice("a", testDriver, "node-a", "node-a", 1,
			gpu("gpu-0", "A0", 0), gpu("gpu-1", "A1", 1), gpu("gpu-2", "A2", 1), gpu("gpu-3", "A3", 1)),
		slice("b", testDriver, "node-b", "node-b", 1, gpu("gpu-0", "B0", 0), gpu("gpu-1", "B1", 0)),
	}, testDriver)
	const numa = "resource.kubernetes.io/numaNode"
	got, ok := devicesSharingAttribute(devices, testDriver, numa, 3)
	if !ok {
		t.Fatal("no group of 3 found")
	}
	var ids []string
	for _, d := range got {
		ids = append(ids, d.Node+" "+d.ID())
	}
	if diff := cmp.Diff([]string{"node-a node-a/gpu-1", "node-a node-a/gpu-2", "node-a node-a/gpu-3"}, ids); diff != "" {
		t.Errorf("group (-want +got):\n%s", diff)
	}
	if _, ok := devicesSharingAttribute(devices, testDriver, numa, 4); ok {
		t.Error("found 4 devices with one NUMA node on one node; there are at most 3")
	}
	if _, ok := devicesSharingAttribute(devices, testDriver, "pcieRoot", 1); ok {
		t.Error("found devices sharing an attribute none has")
	}
}

func TestUUIDSelector(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"uuid":                `device.driver == "gpu.drakit.dev" && device.attributes["gpu.drakit.dev"].?uuid.orValue("") == "GPU-1"`,
		"gpu.drakit.dev/uuid": `device.driver == "gpu.drakit.dev" && device.attributes["gpu.drakit.dev"].?uuid.orValue("") == "GPU-1"`,
		"nvidia.com/uuid":     `device.driver == "gpu.drakit.dev" && device.attributes["nvidia.com"].?uuid.orValue("") == "GPU-1"`,
	}
	for attr, want := range tests {
		if got := UuidSelector(testDriver, attr, "GPU-1"); got != want {
			t.Errorf("uuidSelector(%q) =\n%s\nwant\n%s", attr, got, want)
		}
	}
}
