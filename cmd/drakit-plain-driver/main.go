// Command drakit-plain-driver is drakit's plain DRA driver
// (reference/plaindriver), the kubelet plugin of the plain driver
// DaemonSet. It maps flags (each with an environment twin; a flag given on
// the command line wins) onto plaindriver.Config and calls plaindriver.Run
// until SIGTERM or SIGINT.
package main

import (
	"context"
	"strings"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/internal/logflags"
	"drakit.dev/drakit/reference/plaindriver"
)

func main() { drivercmd.Main("drakit-plain-driver", run) }

// parse maps args and the environment onto a Config and the logging
// configuration; help is true when --help was asked for.
func parse(args []string) (cfg plaindriver.Config, logging *logflags.Logging, help bool, err error) {
	cfg = plaindriver.DefaultConfig()
	f := drivercmd.New("drakit-plain-driver")
	f.Kubelet(drivercmd.Kubelet{
		DriverName: &cfg.DriverName, NodeName: &cfg.NodeName, KubeletRegistrarDir: &cfg.KubeletRegistrarDir,
		KubeletPluginDir: &cfg.KubeletPluginDir, CDIDir: &cfg.CDIDir, Kubeconfig: &cfg.Kubeconfig, HTTPEndpoint: &cfg.HTTPEndpoint,
		PluginDirUsage: "directory of the DRA socket",
	})
	f.String(&cfg.StateDir, "state-dir", "STATE_DIR", "the driver's directory: checkpoint and devices/<device>/serial, mounted into containers")
	f.Int(&cfg.Devices, "devices", "DEVICES", "number of devices to publish, dev-0 … dev-<n-1>")
	styles := make([]string, 0, len(plaindriver.Styles()))
	for _, s := range plaindriver.Styles() {
		styles = append(styles, string(s))
	}
	f.String((*string)(&cfg.Style), "style", "STYLE",
		"how devices are published and handed to containers: "+strings.Join(styles, ", ")+"; empty: mounts")
	known := make([]string, 0, len(plaindriver.Defects()))
	for _, d := range plaindriver.Defects() {
		known = append(known, string(d))
	}
	f.String((*string)(&cfg.Defect), "defect", "DEFECT",
		"a deliberate bug for the conformance kit to catch: "+strings.Join(known, ", ")+"; empty: none")
	logging, help, err = f.Parse(args)
	return cfg, logging, help, err
}

func run(args []string) error {
	cfg, logging, help, err := parse(args)
	if err != nil || help {
		return err
	}
	return drivercmd.Run("drakit-plain-driver", logging, func(ctx context.Context) error { return plaindriver.Run(ctx, cfg) })
}
