package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/internal/drivercmd/drivercmdtest"
	"drakit.dev/drakit/reference/nicdriver"
)

// envTwins are the flags' environment twins.
var envTwins = []string{"DRIVER_NAME", "NODE_NAME", "HOST_ROOT", "SYSFS_ROOT", "KUBELET_REGISTRAR_DIR", "KUBELET_PLUGIN_DIR",
	"CDI_DIR", "KUBECONFIG", "HTTP_ENDPOINT", "VFS_PER_PF", "VF_TIMEOUT", "DEVICE_STATUS", "DEVICE_IPS"}

// clearEnv unsets every environment twin for the test.
func clearEnv(t *testing.T) {
	t.Helper()
	drivercmdtest.ClearEnv(t, envTwins...)
}

// TestParseMapsEveryFlag: each flag sets its Config field, every field has
// a flag, and a flag wins over its environment twin.
func TestParseMapsEveryFlag(t *testing.T) {
	clearEnv(t)
	t.Setenv("NODE_NAME", "from-env")
	t.Setenv("VFS_PER_PF", "7")
	t.Setenv("DEVICE_IPS", "nic-0=192.0.2.1/24")
	cfg, _, help, err := parse([]string{
		"--driver-name=nic.example.com", "--host-root=/h", "--sysfs-root=/s", "--kubelet-registrar-dir=/r", "--kubelet-plugin-dir=/p",
		"--cdi-dir=/c", "--kubeconfig=/k", "--http-endpoint=127.0.0.1:9999", "--vfs-per-pf=2", "--vf-timeout=3s", "--device-status=true",
		"--device-ips=nic-1=192.0.2.2/24,nic-2=2001:db8::2/64", "--v=4",
	})
	if err != nil || help {
		t.Fatalf("parse: %v (help %v)", err, help)
	}
	want := nicdriver.Config{
		DriverName: "nic.example.com", NodeName: "from-env", HostRoot: "/h", SysfsRoot: "/s", VFsPerPF: 2, VFTimeout: 3 * time.Second,
		DeviceStatus: true, DeviceIPs: map[string]string{"nic-1": "192.0.2.2/24", "nic-2": "2001:db8::2/64"},
		KubeletRegistrarDir: "/r", KubeletPluginDir: "/p", CDIDir: "/c", Kubeconfig: "/k", HTTPEndpoint: "127.0.0.1:9999",
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	drivercmdtest.CheckEveryFieldSet(t, cfg)

	t.Setenv("DEVICE_STATUS", "false")
	t.Setenv("VF_TIMEOUT", "9s")
	cfg, _, _, err = parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	want = nicdriver.DefaultConfig()
	want.NodeName, want.VFsPerPF, want.VFTimeout, want.DeviceStatus = "from-env", 7, 9*time.Second, false
	want.DeviceIPs = map[string]string{"nic-0": "192.0.2.1/24"}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config from the environment (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		env, val string
		want     string
	}{
		{[]string{"--vfs-per-pf=many"}, "", "", `invalid argument "many" for "--vfs-per-pf" flag`},
		{[]string{"extra"}, "", "", `unexpected arguments ["extra"]`},
		{nil, "VFS_PER_PF", "four", `parse env VFS_PER_PF="four"`},
		{nil, "VF_TIMEOUT", "long", `parse env VF_TIMEOUT="long"`},
		{nil, "DEVICE_STATUS", "maybe", `parse env DEVICE_STATUS="maybe"`},
		{nil, "DEVICE_IPS", "nic-0", `parse env DEVICE_IPS="nic-0": "nic-0" is not <device>=<cidr>`},
	} {
		clearEnv(t)
		if tc.env != "" {
			t.Setenv(tc.env, tc.val)
		}
		if _, _, _, err := parse(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse %q (%s=%q): error %v, want %q", tc.args, tc.env, tc.val, err, tc.want)
		}
	}
}

// TestRunValidatesFirst: an invalid configuration stops the driver before
// anything starts, naming the field.
func TestRunValidatesFirst(t *testing.T) {
	clearEnv(t)
	t.Setenv("NODE_NAME", "node-a")
	err := run([]string{"--vfs-per-pf=-2"})
	if err == nil || !strings.Contains(err.Error(), "VFsPerPF -2 is not between 0 and 256") {
		t.Errorf("error %v, want the invalid VFsPerPF", err)
	}
}
