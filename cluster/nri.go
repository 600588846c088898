package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"drakit.dev/drakit/internal/shellquote"
)

// emulatorNRIPluginName is the plugin's file in containerd's NRI plugin
// path: containerd launches every executable named <index>-<name> there.
const emulatorNRIPluginName = "10-drakit-emulator"

func nriDir(cfg Config) string { return filepath.Join(containerdDir(cfg), "nri") }

func emulatorNRIPluginPath(cfg Config) string {
	return filepath.Join(nriDir(cfg), "plugins", emulatorNRIPluginName)
}

// nriConfig is containerd's NRI section. With Config.EmulatorNRIPlugin,
// NRI runs only the plugins containerd launches from the node's own plugin
// dir (the emulator's, writeEmulatorNRIPlugin), with no socket for outside
// plugins and timeouts a loaded 2-core host keeps (the defaults are 5 s to
// register and 2 s a request); without it NRI is off, which also keeps
// containerd from creating /run/nri.
func nriConfig(cfg Config) string {
	if cfg.EmulatorNRIPlugin == "" {
		return "  [plugins.'io.containerd.nri.v1.nri']\n    disable = true\n"
	}
	q := tomlString
	return fmt.Sprintf(`  [plugins.'io.containerd.nri.v1.nri']
    disable = false
    disable_connections = true
    socket_path = %s
    plugin_path = %s
    plugin_config_path = %s
    plugin_registration_timeout = "60s"
    plugin_request_timeout = "30s"
`, q(filepath.Join(nriDir(cfg), "nri.sock")), q(filepath.Dir(emulatorNRIPluginPath(cfg))), q(filepath.Join(nriDir(cfg), "conf")))
}

// writeEmulatorNRIPlugin writes the executable containerd launches as the
// emulator's NRI plugin: `drakit emulator nri-plugin` for this node's
// emulator root, its log in the node's log dir. containerd starts it with
// an empty environment and no arguments, hence a script.
func writeEmulatorNRIPlugin(cfg Config) error {
	if cfg.EmulatorNRIPlugin == "" {
		return nil
	}
	p := emulatorNRIPluginPath(cfg)
	script := fmt.Sprintf("#!/bin/sh\nexec %s emulator nri-plugin --root %s --ready-file %s 2>>%s\n",
		shellquote.Quote(cfg.EmulatorNRIPlugin), shellquote.Quote(EmulatorRoot(cfg)), shellquote.Quote(emulatorNRIPluginReady(cfg)), shellquote.Quote(emulatorNRIPluginLog(cfg)))
	if err := writeFileAtomic(p, []byte(script), 0o755); err != nil {
		return fmt.Errorf("write the emulator's NRI plugin: %w", err)
	}
	return nil
}

func emulatorNRIPluginReady(cfg Config) string {
	return filepath.Join(nriDir(cfg), "emulator-plugin.ready")
}
func emulatorNRIPluginLog(cfg Config) string { return filepath.Join(logDir(cfg), "nri-emulator.log") }

// forgetEmulatorNRIPlugin removes the ready file of an earlier containerd
// before this node's containerd starts.
func forgetEmulatorNRIPlugin(cfg Config) error {
	if err := os.Remove(emulatorNRIPluginReady(cfg)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the emulator's NRI plugin ready file: %w", err)
	}
	return nil
}

// waitEmulatorNRIPlugin waits until the node's containerd, which has just
// started, has the emulator's NRI plugin registered: containerd only logs a
// warning for a plugin that does not start, and the containers would lack
// NVML without a word.
func waitEmulatorNRIPlugin(ctx context.Context, cfg Config) error {
	if cfg.EmulatorNRIPlugin == "" {
		return nil
	}
	ready := emulatorNRIPluginReady(cfg)
	deadline := time.Now().Add(cfg.StartTimeout)
	for {
		if _, err := os.Stat(ready); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("start the emulator's NRI plugin on node %s: containerd did not register it within %v (its log: %s; containerd's: %s)",
				nodeName(cfg), cfg.StartTimeout, emulatorNRIPluginLog(cfg), LogPath(cfg, Containerd))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
