package plaindriver

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"drakit.dev/drakit/reference/pluginharness"
)

func TestDefaultConfig(t *testing.T) {
	t.Parallel()
	want := Config{
		Kubelet:  pluginharness.Kubelet{DriverName: "plain.drakit.dev", KubeletRegistrarDir: "/var/lib/kubelet/plugins_registry", CDIDir: "/var/run/cdi"},
		Devices:  4,
		StateDir: "/var/lib/drakit/plain-driver",
	}
	cfg := DefaultConfig()
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if got := cfg.EffectiveKubeletPluginDir(); got != "/var/lib/kubelet/plugins/plain.drakit.dev" {
		t.Errorf("plugin directory %s", got)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		// wantErrs are the lines of the joined error after the
		// ErrInvalidConfig prefix; none for a valid configuration.
		wantErrs []string
	}{
		{"valid-defaults", func(*Config) {}, nil},
		{"valid-one-device", func(c *Config) { c.Devices = 1 }, nil},
		{"valid-128-devices", func(c *Config) { c.Devices = 128 }, nil},
		{"valid-kubeconfig-and-plugin-dir", func(c *Config) { c.Kubeconfig, c.KubeletPluginDir = "kubeconfig", "/p" }, nil},
		{"valid-extra-device", func(c *Config) { c.Defect, c.Devices = DefectExtraDevice, 2 }, nil},
		{"valid-leave-cdi-spec", func(c *Config) { c.Defect = DefectLeaveCDISpec }, nil},
		{"valid-duplicate-device-names", func(c *Config) { c.Defect, c.Devices = DefectDuplicateDeviceNames, 127 }, nil},
		{"unknown-defect", func(c *Config) { c.Defect = "slow" }, []string{
			`Defect: unknown defect "slow" (known: extra-device, wrong-device, missing-env, env-wrong-value, mount-missing, ` +
				`mount-writable, device-node-missing, extra-device-node, no-cdi-edits, unresolvable-cdi-device, config-ignored, ` +
				`duplicate-device-names, duplicate-identity, attribute-type, counters-overcommitted, counters-underconsumed, ` +
				`prepare-fails, prepare-slow, shares-refused, admin-access-refused, not-idempotent, unprepare-fails, ` +
				`leave-cdi-spec, unprepare-keeps-device, state-lost-on-restart; empty for none)`,
		}},
		{"unknown-style", func(c *Config) { c.Style = "fancy" }, []string{
			`Style: unknown style "fancy" (known: mounts, env-only, device-nodes, partitions, consumable-capacity, strict-config; empty for mounts)`,
		}},
		{"valid-every-style", func(c *Config) { c.Style = StyleDeviceNodes }, nil},
		{"defect-needs-style", func(c *Config) { c.Style, c.Defect = StyleEnvOnly, DefectMountMissing }, []string{
			"Defect: defect mount-missing needs style mounts, not env-only",
		}},
		{"defect-default-style", func(c *Config) { c.Defect = DefectMountWritable }, nil},
		{"partitions-fit-one-slice", func(c *Config) { c.Style, c.Devices = StylePartitions, 10 }, []string{
			"Devices: 10 devices: must be between 1 and 9 with style partitions",
		}},
		{"consumable-capacity-room", func(c *Config) { c.Style, c.Devices = StyleConsumableCapacity, 127 }, []string{
			"Devices: 127 devices: must be between 1 and 126 with style consumable-capacity",
		}},
		{"no-devices", func(c *Config) { c.Devices = 0 }, []string{"Devices: 0 devices: must be between 1 and 128"}},
		{"too-many-devices", func(c *Config) { c.Devices = 129 }, []string{"Devices: 129 devices: must be between 1 and 128"}},
		{"extra-device-needs-two", func(c *Config) { c.Defect, c.Devices = DefectExtraDevice, 1 }, []string{
			"Devices: 1 devices: must be between 2 and 128 with defect extra-device",
		}},
		{"duplicate-needs-room", func(c *Config) { c.Defect, c.Devices = DefectDuplicateDeviceNames, 128 }, []string{
			"Devices: 128 devices: must be between 1 and 127 with defect duplicate-device-names",
		}},
		{"bad-driver-name", func(c *Config) { c.DriverName = "Plain" }, []string{
			`DriverName "Plain": ` + strings.Join(validation.IsDNS1123Subdomain("Plain"), "; "),
		}},
		{"long-driver-name", func(c *Config) { c.DriverName = strings.Repeat("a", 64) }, []string{
			`DriverName "` + strings.Repeat("a", 64) + `" is longer than 63 characters`,
		}},
		{"no-node", func(c *Config) { c.NodeName = "" }, []string{"NodeName is required"}},
		{"relative-paths", func(c *Config) { c.StateDir, c.CDIDir, c.KubeletPluginDir = "state", "", "plugins" }, []string{
			`StateDir "state" must be an absolute path`,
			`KubeletPluginDir "plugins" must be an absolute path`,
			`CDIDir "" must be an absolute path`,
		}},
		{"socket-too-long", func(c *Config) { c.KubeletRegistrarDir = "/" + strings.Repeat("r", 90) }, []string{
			`KubeletRegistrarDir "/` + strings.Repeat("r", 90) + `": socket /` + strings.Repeat("r", 90) +
				`/plain.drakit.dev-reg.sock is 117 bytes, 10 over the 107-byte AF_UNIX limit`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.NodeName = testNode
			tc.mutate(&cfg)
			err := cfg.Validate()
			switch {
			case tc.wantErrs == nil && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErrs != nil && err == nil:
				t.Fatalf("no error, want %q", tc.wantErrs)
			case err != nil && !errors.Is(err, ErrInvalidConfig):
				t.Fatalf("error %v is not ErrInvalidConfig", err)
			case err != nil:
				got := strings.Split(strings.TrimPrefix(err.Error(), ErrInvalidConfig.Error()+": "), "\n")
				if diff := cmp.Diff(tc.wantErrs, got); diff != "" {
					t.Errorf("errors (-want +got):\n%s", diff)
				}
			}
		})
	}
}
