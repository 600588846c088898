package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"drakit.dev/drakit/internal/shellquote"
)

func TestNRIConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RunDir = "/r"
	cfg.EmulatorNRIPlugin = "/opt/drakit's/drakit"
	got := containerdConfig(cfg, "drakit.dev/pause:dev")
	for _, want := range []string{
		"[plugins.'io.containerd.nri.v1.nri']\n    disable = false\n    disable_connections = true",
		`socket_path = "/r/containerd/nri/nri.sock"`,
		`plugin_path = "/r/containerd/nri/plugins"`,
		`plugin_config_path = "/r/containerd/nri/conf"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("containerd config lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "[plugins.'io.containerd.nri.v1.nri']"); n != 1 {
		t.Errorf("containerd config has %d NRI sections, want 1", n)
	}
}

// TestEmulatorNRIPluginScript runs the script containerd would launch, with
// a stand-in for drakit that prints its arguments, and checks that it
// passes the node's emulator root and logs to the node's log dir.
func TestEmulatorNRIPluginScript(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "it's drakit")
	out := filepath.Join(dir, "args")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" >"+shellquote.Quote(out)+"\necho to-stderr >&2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.RunDir = filepath.Join(dir, "run")
	cfg.Nodes = 2
	cfg.EmulatorNRIPlugin = fake
	node := cfg.node(2)
	if err := os.MkdirAll(logDir(node), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeEmulatorNRIPlugin(node); err != nil {
		t.Fatal(err)
	}
	script := emulatorNRIPluginPath(node)
	if filepath.Dir(filepath.Dir(script)) != nriDir(node) || !strings.HasPrefix(script, nodeDir(node)+"/") {
		t.Errorf("plugin at %s, want it below node 2's dir %s", script, nodeDir(node))
	}
	cmd := exec.Command(script)
	cmd.Env = []string{"NRI_PLUGIN_SOCKET=3"} // what containerd gives it
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run %s: %v: %s", script, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "emulator\nnri-plugin\n--root\n"+EmulatorRoot(node)+"\n--ready-file\n"+emulatorNRIPluginReady(node)+"\n"; got != want {
		t.Errorf("drakit got arguments %q, want %q", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(logDir(node), "nri-emulator.log")); string(b) != "to-stderr\n" {
		t.Errorf("the plugin's log holds %q, want its stderr", b)
	}
}

func TestNoEmulatorNRIPlugin(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RunDir = t.TempDir()
	if err := writeEmulatorNRIPlugin(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(nriDir(cfg)); !os.IsNotExist(err) {
		t.Errorf("without EmulatorNRIPlugin %s exists (%v)", nriDir(cfg), err)
	}
}

func TestValidateEmulatorNRIPlugin(t *testing.T) {
	for _, p := range []string{"drakit", "/a/../drakit", "/a/dra\nkit"} {
		cfg := DefaultConfig()
		cfg.EmulatorNRIPlugin = p
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "EmulatorNRIPlugin") {
			t.Errorf("EmulatorNRIPlugin %q: got %v, want an error naming the field", p, err)
		}
	}
}

// TestWaitEmulatorNRIPlugin: up waits for the plugin's ready file, and
// names the logs to read when containerd never registered the plugin.
func TestWaitEmulatorNRIPlugin(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RunDir = t.TempDir()
	cfg.EmulatorNRIPlugin = "/opt/drakit"
	cfg.StartTimeout = 300 * time.Millisecond
	if err := os.MkdirAll(nriDir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	err := waitEmulatorNRIPlugin(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), emulatorNRIPluginLog(cfg)) || !strings.Contains(err.Error(), LogPath(cfg, Containerd)) {
		t.Fatalf("without a ready file: got %v, want an error naming both logs", err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = os.WriteFile(emulatorNRIPluginReady(cfg), []byte("ready\n"), 0o644)
	}()
	cfg.StartTimeout = 10 * time.Second
	if err := waitEmulatorNRIPlugin(t.Context(), cfg); err != nil {
		t.Fatalf("with the ready file written: %v", err)
	}
	if err := forgetEmulatorNRIPlugin(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(emulatorNRIPluginReady(cfg)); !os.IsNotExist(err) {
		t.Errorf("the ready file is still there after forgetEmulatorNRIPlugin (%v)", err)
	}
	cfg.EmulatorNRIPlugin = ""
	if err := waitEmulatorNRIPlugin(t.Context(), cfg); err != nil {
		t.Errorf("without the plugin: %v", err)
	}
}
