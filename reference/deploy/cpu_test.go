package deploy

import (
	"slices"
	"testing"
)

// TestCPUObjectsSubstitute: the host root reaches the flag and the one
// read-only mount, its NUMA directory; the state directory both flag and
// mount; and the DeviceClass selects the driver's name.
func TestCPUObjectsSubstitute(t *testing.T) {
	t.Parallel()
	o := DefaultOptions(KindCPU)
	o.DriverName, o.HostRoot, o.StateDir = "cpu.example.com", "/run/emu", "/run/cpu-state"
	m, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	c := m.DaemonSet.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--driver-name=cpu.example.com", "--host-root=/run/emu", "--state-dir=/run/cpu-state"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	mounts := map[string]bool{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm.ReadOnly
	}
	if ro, ok := mounts["/run/emu/sys/devices/system/node"]; !ok || !ro {
		t.Errorf("mounts %v: want /run/emu/sys/devices/system/node read-only", mounts)
	}
	if ro, ok := mounts["/run/cpu-state"]; !ok || ro {
		t.Errorf("mounts %v: want /run/cpu-state writable", mounts)
	}
	if got := m.DeviceClass.Spec.Selectors[0].CEL.Expression; got != `device.driver == "cpu.example.com"` || m.DeviceClass.Name != "cpu.example.com" {
		t.Errorf("DeviceClass %s selects %s", m.DeviceClass.Name, got)
	}
	if o.HostRoot = "relative"; o.Validate() == nil {
		t.Error("a relative host root was accepted")
	}
}
