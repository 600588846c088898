package nicdriver

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/reference/pluginharness"
)

// Run discovers the NICs, starts the kubelet plugin, publishes the node's
// pool and serves until ctx is canceled (then it returns nil) or a fatal
// error stops it (then it returns that error).
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	client, err := pluginharness.NewClient(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	return run(ctx, cfg, client)
}

// run is Run with the client injected: pluginharness.Serve around the NIC
// driver's own plugin, which wraps the harness's.
func run(ctx context.Context, cfg Config, client kubernetes.Interface) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	pluginDir := cfg.EffectiveKubeletPluginDir()
	var p *plugin
	hcfg := harnessConfig(cfg)
	hcfg.Client = client
	hcfg.RegistrarDir = cfg.KubeletRegistrarDir
	hcfg.PluginDir = pluginDir
	hcfg.HTTPEndpoint = cfg.HTTPEndpoint
	hcfg.RunningLog = func() []any {
		pfs, vfs := 0, 0
		for _, d := range p.hw.list {
			if d.Kind == kindPF {
				pfs++
			} else {
				vfs++
			}
		}
		return []any{"pfs", len(p.hw.pfs), "pfShareDevices", pfs, "vfDevices", vfs,
			"sysfsRoot", cfg.EffectiveSysfsRoot(), "registrarDir", cfg.KubeletRegistrarDir, "pluginDir", pluginDir, "cdiDir", cfg.CDIDir,
			"deviceStatus", cfg.DeviceStatus}
	}
	return pluginharness.Serve(ctx, hcfg, func(ctx context.Context, hcfg pluginharness.Config) (pluginharness.Served, error) {
		var err error
		p, err = newPlugin(ctx, cfg, client, hcfg.Fatal)
		return p, err
	})
}
