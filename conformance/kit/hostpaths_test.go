package kit

import (
	"os"
	"path/filepath"
	"testing"

	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// TestHostPath: a node path below a mapped directory is read below its
// host directory (the longest match wins); others are the kit's own.
func TestHostPath(t *testing.T) {
	c := Config{NodeHostPaths: map[string]string{
		"/var/lib/kubelet":         "/s/n/kubelet",
		"/var/lib/kubelet/plugins": "/other",
		"/var/lib/drakit/emulator": "/s/n/emulator",
	}}
	for in, want := range map[string]string{
		"/var/lib/kubelet/plugins_registry/x.sock": "/s/n/kubelet/plugins_registry/x.sock",
		"/var/lib/kubelet/plugins/gpu/dra.sock":    "/other/gpu/dra.sock",
		"/var/lib/kubelet":                         "/s/n/kubelet",
		"/var/lib/kubeletx/y":                      "/var/lib/kubeletx/y",
		"/var/lib/drakit/emulator/dev/nvidiactl":   "/s/n/emulator/dev/nvidiactl",
		"/dev/null":                                "/dev/null",
	} {
		if got := c.HostPath(in); got != want {
			t.Errorf("hostPath(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (Config{}).HostPath("/var/lib/kubelet/a"); got != "/var/lib/kubelet/a" {
		t.Errorf("no map: hostPath = %q", got)
	}
}

// TestHostDeviceNodes: a CDI spec naming the node's device files (in the
// device's and the spec's edits, with and without a host path) applies
// here once they are rewritten to the host directory holding them.
func TestHostDeviceNodes(t *testing.T) {
	specs, host := t.TempDir(), t.TempDir()
	if err := os.Symlink("/dev/null", filepath.Join(host, "ctl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(host, "gpu0")); err != nil {
		t.Fatal(err)
	}
	spec := `cdiVersion: "0.6.0"
kind: example.com/gpu
devices:
- name: gpu0
  containerEdits:
    deviceNodes:
    - path: /dev/gpu0
      hostPath: /node/emu/gpu0
containerEdits:
  deviceNodes:
  - path: /node/emu/ctl
`
	if err := os.WriteFile(filepath.Join(specs, "example.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	newCache := func() *cdi.Cache {
		cache, err := cdi.NewCache(cdi.WithSpecDirs(specs), cdi.WithAutoRefresh(false))
		if err != nil {
			t.Fatal(err)
		}
		return cache
	}
	c := Config{NodeHostPaths: map[string]string{"/node/emu": host}}
	cache := newCache()
	c.hostDeviceNodes(cache)
	d := cache.GetDevice("example.com/gpu=gpu0")
	if got := d.ContainerEdits.DeviceNodes[0].HostPath; got != filepath.Join(host, "gpu0") {
		t.Errorf("device node host path %q", got)
	}
	if got := d.GetSpec().ContainerEdits.DeviceNodes[0]; got.HostPath != filepath.Join(host, "ctl") || got.Path != "/node/emu/ctl" {
		t.Errorf("spec device node %+v", got)
	}
	if (Config{}).hostDeviceNodes(newCache()); newCache().GetDevice("example.com/gpu=gpu0").ContainerEdits.DeviceNodes[0].HostPath != "/node/emu/gpu0" {
		t.Error("no map: host paths changed")
	}
}
