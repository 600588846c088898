package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/internal/drivercmd/drivercmdtest"
	"drakit.dev/drakit/reference/plaindriver"
)

// clearEnv unsets every environment twin for the test.
func clearEnv(t *testing.T) {
	t.Helper()
	drivercmdtest.ClearEnv(t, "DRIVER_NAME", "NODE_NAME", "STATE_DIR", "KUBELET_REGISTRAR_DIR", "KUBELET_PLUGIN_DIR",
		"CDI_DIR", "KUBECONFIG", "HTTP_ENDPOINT", "DEVICES", "STYLE", "DEFECT")
}

// TestParseMapsEveryFlag: each flag sets its Config field, every field has a
// flag, and the environment twin is overridden by the flag.
func TestParseMapsEveryFlag(t *testing.T) {
	clearEnv(t)
	t.Setenv("NODE_NAME", "from-env")
	t.Setenv("DEVICES", "7")
	t.Setenv("DEFECT", "leave-cdi-spec")
	cfg, _, help, err := parse([]string{
		"--driver-name=plain.example.com", "--state-dir=/s", "--kubelet-registrar-dir=/r", "--kubelet-plugin-dir=/p",
		"--cdi-dir=/c", "--kubeconfig=/k", "--http-endpoint=127.0.0.1:9999", "--devices=3", "--style=device-nodes", "--defect=extra-device", "--v=4",
	})
	if err != nil || help {
		t.Fatalf("parse: %v (help %v)", err, help)
	}
	want := plaindriver.Config{
		DriverName: "plain.example.com", NodeName: "from-env", Devices: 3, StateDir: "/s",
		KubeletRegistrarDir: "/r", KubeletPluginDir: "/p", CDIDir: "/c", Kubeconfig: "/k", HTTPEndpoint: "127.0.0.1:9999", Style: plaindriver.StyleDeviceNodes,
		Defect: plaindriver.DefectExtraDevice,
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	drivercmdtest.CheckEveryFieldSet(t, cfg)

	t.Setenv("DEFECT", "")
	cfg, _, _, err = parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	want = plaindriver.DefaultConfig()
	want.NodeName, want.Devices = "from-env", 7
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config from the environment (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--devices=many"}, "", `invalid argument "many" for "--devices" flag`},
		{[]string{"extra"}, "", `unexpected arguments ["extra"]`},
		{nil, "four", `parse env DEVICES="four"`},
	} {
		if tc.env != "" {
			t.Setenv("DEVICES", tc.env)
		}
		if _, _, _, err := parse(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse %q (DEVICES %q): error %v, want %q", tc.args, tc.env, err, tc.want)
		}
	}
}

// TestRunRejectsUnknownDefect: an unknown defect stops the driver before
// anything starts, naming the known ones.
func TestRunRejectsUnknownDefect(t *testing.T) {
	clearEnv(t)
	t.Setenv("NODE_NAME", "node-a")
	err := run([]string{"--defect=slow"})
	if err == nil || !strings.Contains(err.Error(), `unknown defect "slow" (known: extra-device, wrong-device, missing-env, env-wrong-value, mount-missing, mount-writable, device-node-missing, extra-device-node, no-cdi-edits, unresolvable-cdi-device, config-ignored, duplicate-device-names, duplicate-identity, attribute-type, counters-overcommitted, counters-underconsumed, prepare-fails, prepare-slow, shares-refused, admin-access-refused, not-idempotent, unprepare-fails, leave-cdi-spec, unprepare-keeps-device, state-lost-on-restart; empty for none)`) {
		t.Errorf("error %v, want the unknown defect with the known ones", err)
	}
}
