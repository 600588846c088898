package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/internal/drivercmd/drivercmdtest"
	"drakit.dev/drakit/reference/tpudriver"
)

var envTwins = []string{"DRIVER_NAME", "NODE_NAME", "HOST_ROOT", "TPU_ENV_FILE", "STATE_DIR", "KUBELET_REGISTRAR_DIR",
	"KUBELET_PLUGIN_DIR", "CDI_DIR", "KUBECONFIG", "HTTP_ENDPOINT", "SHAPES", "INTERVAL"}

// TestParsePluginMapsEveryFlag: each flag sets its Config field and every
// field has a flag.
func TestParsePluginMapsEveryFlag(t *testing.T) {
	drivercmdtest.ClearEnv(t, envTwins...)
	t.Setenv("NODE_NAME", "from-env")
	cfg, _, help, err := parsePlugin([]string{"--driver-name=tpu.example.com", "--host-root=/h", "--tpu-env-file=/e",
		"--state-dir=/s", "--kubelet-registrar-dir=/r", "--kubelet-plugin-dir=/p", "--cdi-dir=/c", "--kubeconfig=/k", "--http-endpoint=127.0.0.1:9999"})
	if err != nil || help {
		t.Fatalf("parse: %v (help %v)", err, help)
	}
	want := tpudriver.Config{DriverName: "tpu.example.com", NodeName: "from-env", HostRoot: "/h", TPUEnvFile: "/e", StateDir: "/s",
		KubeletRegistrarDir: "/r", KubeletPluginDir: "/p", CDIDir: "/c", Kubeconfig: "/k", HTTPEndpoint: "127.0.0.1:9999"}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	drivercmdtest.CheckEveryFieldSet(t, cfg)
}

// TestParseController: shapes and interval from flags and the
// environment; a bad shape is an error naming the flag.
func TestParseController(t *testing.T) {
	drivercmdtest.ClearEnv(t, envTwins...)
	t.Setenv("SHAPES", "2x2x2,full")
	cfg, _, _, err := parseController([]string{"--interval=3s", "--driver-name=tpu.example.com", "--kubeconfig=/k"})
	if err != nil {
		t.Fatal(err)
	}
	want := tpudriver.ControllerConfig{DriverName: "tpu.example.com", Shapes: []string{"2x2x2", "full"}, Interval: 3 * time.Second, Kubeconfig: "/k"}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if _, _, _, err := parseController([]string{"--shapes=2x2x0"}); err == nil || !strings.Contains(err.Error(), "--shapes") {
		t.Errorf("bad shape: %v", err)
	}
}
