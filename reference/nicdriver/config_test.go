package nicdriver

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestConfigValidate checks the driver's own fields and that Validate makes
// the checks every driver makes (pluginharness's tests hold those).
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() Config {
		c := DefaultConfig()
		c.NodeName = "node-1"
		return c
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*Config)
		wantErr string // empty: valid
	}{
		{"defaults plus node", func(*Config) {}, ""},
		{"emulated root", func(c *Config) { c.HostRoot = "/var/lib/drakit/emulator" }, ""},
		{"no VFs", func(c *Config) { c.VFsPerPF = 0 }, ""},
		{"IPs", func(c *Config) {
			c.DeviceIPs = map[string]string{"nic-0000-3b-00-0-vf0": "192.0.2.10/24", "nic-0000-3b-00-0": "2001:db8::1/64"}
		}, ""},
		{"no node", func(c *Config) { c.NodeName = "" }, "NodeName is required"},
		{"relative host root", func(c *Config) { c.HostRoot = "emulator" }, `HostRoot "emulator" must be an absolute path`},
		{"relative sysfs", func(c *Config) { c.SysfsRoot = "sys" }, `SysfsRoot "sys" must be an absolute path or empty`},
		{"negative VFs", func(c *Config) { c.VFsPerPF = -1 }, "VFsPerPF -1 is not between 0 and 256"},
		{"too many VFs", func(c *Config) { c.VFsPerPF = 257 }, "VFsPerPF 257 is not between 0 and 256"},
		{"no VF timeout", func(c *Config) { c.VFTimeout = 0 }, "VFTimeout 0s is not positive and at most 40s"},
		{"VF timeout past the kubelet's", func(c *Config) { c.VFTimeout = time.Minute }, "VFTimeout 1m0s"},
		{"IP of no device", func(c *Config) { c.DeviceIPs = map[string]string{"NIC_0": "192.0.2.1/24"} }, `DeviceIPs: "NIC_0" is not a device name`},
		{"IP without prefix", func(c *Config) { c.DeviceIPs = map[string]string{"nic-0": "192.0.2.1"} }, `DeviceIPs[nic-0]: "192.0.2.1" is not an IP address in CIDR notation`},
		{"IP not canonical", func(c *Config) { c.DeviceIPs = map[string]string{"nic-0": "2001:DB8::1/64"} }, `DeviceIPs[nic-0]: "2001:DB8::1/64" is not in canonical form, want "2001:db8::1/64"`},
		{"registrar socket too long", func(c *Config) { c.KubeletRegistrarDir = "/" + strings.Repeat("r", 100) }, "registration socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := valid()
			tc.mutate(&c)
			err := c.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			case err != nil && !errors.Is(err, ErrInvalidConfig):
				t.Fatalf("error %v is not ErrInvalidConfig", err)
			}
		})
	}
}

func TestConfigEffectivePaths(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.HostRoot = "/var/lib/drakit/emulator"
	if got, want := c.EffectiveSysfsRoot(), "/var/lib/drakit/emulator/sys"; got != want {
		t.Errorf("EffectiveSysfsRoot = %s, want %s", got, want)
	}
	if got, want := c.EffectiveKubeletPluginDir(), "/var/lib/kubelet/plugins/nic.drakit.dev"; got != want {
		t.Errorf("EffectiveKubeletPluginDir = %s, want %s", got, want)
	}
	c.SysfsRoot, c.KubeletPluginDir = "/sys", "/run/k/plugins/x"
	if c.EffectiveSysfsRoot() != "/sys" || c.EffectiveKubeletPluginDir() != "/run/k/plugins/x" {
		t.Errorf("explicit paths not used: %s, %s", c.EffectiveSysfsRoot(), c.EffectiveKubeletPluginDir())
	}
}
