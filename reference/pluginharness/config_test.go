package pluginharness

import (
	"strings"
	"testing"
)

// TestConfigChecks holds the checks every driver's Validate makes through
// CheckNames, CheckPaths and CheckSockets; the drivers' tests check only
// that they make them.
func TestConfigChecks(t *testing.T) {
	t.Parallel()
	const (
		driver    = "gpu.drakit.dev"
		node      = "node-1"
		registrar = "/var/lib/kubelet/plugins_registry"
	)
	plugin := EffectivePluginDir("", driver)
	paths := func(root, cdi, registrar, sysfs, plugin string) error {
		return CheckPaths(
			PathField{Field: "HostRoot", Value: root},
			PathField{Field: "KubeletRegistrarDir", Value: registrar},
			PathField{Field: "CDIDir", Value: cdi},
			PathField{Field: "SysfsRoot", Value: sysfs, Optional: true},
			PathField{Field: "KubeletPluginDir", Value: plugin, Optional: true},
		)
	}
	for _, tc := range []struct {
		name    string
		err     error
		wantErr string // empty: valid
	}{
		{"valid names", CheckNames(driver, node), ""},
		{"node an IP address", CheckNames(driver, "127.0.0.1"), ""},
		{"no node", CheckNames(driver, ""), "NodeName is required"},
		{"node not a pool name", CheckNames(driver, "Node_1"), `NodeName "Node_1" is not usable as a pool name`},
		{"driver name upper case", CheckNames("GPU.example.com", node), `DriverName "GPU.example.com"`},
		{"driver name too long", CheckNames(strings.Repeat("a", 60)+".example.com", node), "longer than 63"},
		{"valid paths", paths("/", DefaultCDIDir, registrar, "", ""), ""},
		{"valid derived paths given", paths("/", DefaultCDIDir, registrar, "/sys", "/p"), ""},
		{"relative root", paths("emulator", DefaultCDIDir, registrar, "", ""), `HostRoot "emulator" must be an absolute path`},
		{"empty CDI dir", paths("/", "", registrar, "", ""), `CDIDir "" must be an absolute path`},
		{"relative registrar dir", paths("/", DefaultCDIDir, "plugins_registry", "", ""), `KubeletRegistrarDir "plugins_registry" must be an absolute path`},
		{"relative sysfs", paths("/", DefaultCDIDir, registrar, "sys", ""), `SysfsRoot "sys" must be an absolute path or empty`},
		{"relative plugin dir", paths("/", DefaultCDIDir, registrar, "", "p"), `KubeletPluginDir "p" must be an absolute path or empty`},
		{"valid sockets", CheckSockets(registrar, plugin, driver), ""},
		{"registrar socket too long", CheckSockets("/"+strings.Repeat("r", 100), plugin, driver), "registration socket"},
		{"plugin socket too long", CheckSockets(registrar, "/"+strings.Repeat("p", 100), driver),
			`KubeletPluginDir "/` + strings.Repeat("p", 100) + `": DRA socket /` + strings.Repeat("p", 100) + `/dra.sock is 110 bytes, 3 over the 107-byte AF_UNIX limit`},
	} {
		switch {
		case tc.wantErr == "" && tc.err != nil:
			t.Errorf("%s: unexpected error: %v", tc.name, tc.err)
		case tc.wantErr != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.wantErr)
		}
	}
	if got, want := plugin, "/var/lib/kubelet/plugins/gpu.drakit.dev"; got != want {
		t.Errorf("EffectivePluginDir = %s, want %s", got, want)
	}
	if got := EffectivePluginDir("/run/k/plugins/x", driver); got != "/run/k/plugins/x" {
		t.Errorf("EffectivePluginDir ignores the given directory: %s", got)
	}
}
