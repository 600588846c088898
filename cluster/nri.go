package cluster

import (
	"fmt"
	"path/filepath"
	"strings"
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
	script := fmt.Sprintf("#!/bin/sh\nexec %s emulator nri-plugin --root %s 2>>%s\n",
		shellQuote(cfg.EmulatorNRIPlugin), shellQuote(EmulatorRoot(cfg)), shellQuote(filepath.Join(logDir(cfg), "nri-emulator.log")))
	if err := writeFileAtomic(p, []byte(script), 0o755); err != nil {
		return fmt.Errorf("write the emulator's NRI plugin: %w", err)
	}
	return nil
}

// shellQuote quotes s as one POSIX shell word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
