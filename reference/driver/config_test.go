package driver

import (
	"errors"
	"strings"
	"testing"
)

// TestConfigValidate checks the driver's own fields and that Validate makes
// the checks every driver makes (pluginharness's tests hold those).
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() Config {
		c := DefaultConfig()
		c.NodeName = "127.0.0.1"
		return c
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*Config)
		wantErr string // empty: valid
	}{
		{"defaults plus node", func(*Config) {}, ""},
		{"emulated root", func(c *Config) { c.DriverRoot = "/home/u/.local/state/drakit/cluster/emulator" }, ""},
		{"no node", func(c *Config) { c.NodeName = "" }, "NodeName is required"},
		{"relative driver root", func(c *Config) { c.DriverRoot = "emulator" }, `DriverRoot "emulator" must be an absolute path`},
		{"relative sysfs", func(c *Config) { c.SysfsRoot = "sys" }, `SysfsRoot "sys" must be an absolute path or empty`},
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
	c.DriverRoot = "/var/lib/drakit/emulator"
	if got, want := c.EffectiveSysfsRoot(), "/var/lib/drakit/emulator/sys"; got != want {
		t.Errorf("EffectiveSysfsRoot = %s, want %s", got, want)
	}
	if got, want := c.EffectiveKubeletPluginDir(), "/var/lib/kubelet/plugins/gpu.drakit.dev"; got != want {
		t.Errorf("EffectiveKubeletPluginDir = %s, want %s", got, want)
	}
	c.SysfsRoot, c.KubeletPluginDir = "/sys", "/run/k/plugins/x"
	if c.EffectiveSysfsRoot() != "/sys" || c.EffectiveKubeletPluginDir() != "/run/k/plugins/x" {
		t.Errorf("explicit paths not used: %s, %s", c.EffectiveSysfsRoot(), c.EffectiveKubeletPluginDir())
	}
}
