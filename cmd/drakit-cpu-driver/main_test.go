package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/internal/drivercmd/drivercmdtest"
	"drakit.dev/drakit/reference/cpudriver"
)

// TestParseMapsEveryFlag: each flag sets its Config field, every field has a
// flag, and the environment twin is overridden by the flag.
func TestParseMapsEveryFlag(t *testing.T) {
	drivercmdtest.ClearEnv(t, "DRIVER_NAME", "NODE_NAME", "HOST_ROOT", "STATE_DIR", "KUBELET_REGISTRAR_DIR", "KUBELET_PLUGIN_DIR",
		"CDI_DIR", "KUBECONFIG", "HTTP_ENDPOINT")
	t.Setenv("NODE_NAME", "from-env")
	t.Setenv("HOST_ROOT", "/env-root")
	cfg, _, help, err := parse([]string{
		"--driver-name=cpu.example.com", "--host-root=/h", "--state-dir=/s", "--kubelet-registrar-dir=/r",
		"--kubelet-plugin-dir=/p", "--cdi-dir=/c", "--kubeconfig=/k", "--http-endpoint=127.0.0.1:9999", "--v=4",
	})
	if err != nil || help {
		t.Fatalf("parse: %v (help %v)", err, help)
	}
	want := cpudriver.Config{
		DriverName: "cpu.example.com", NodeName: "from-env", HostRoot: "/h", StateDir: "/s",
		KubeletRegistrarDir: "/r", KubeletPluginDir: "/p", CDIDir: "/c", Kubeconfig: "/k", HTTPEndpoint: "127.0.0.1:9999",
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	drivercmdtest.CheckEveryFieldSet(t, cfg)

	cfg, _, _, err = parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	want = cpudriver.DefaultConfig()
	want.NodeName, want.HostRoot = "from-env", "/env-root"
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config from the environment (-want +got):\n%s", diff)
	}
}
