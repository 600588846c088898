package driver

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/reference/pluginharness"
)

// Run discovers the GPUs, starts the kubelet plugin, publishes the node's
// pool and serves until ctx is canceled (then it returns nil) or a fatal
// error stops it.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	client, err := pluginharness.NewClient(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	disc, lib, err := NewNVMLDiscoverer(cfg.DriverRoot, cfg.EffectiveSysfsRoot())
	if err != nil {
		return err
	}
	return run(ctx, cfg, client, disc, lib, &migOps{lib: disc.NVML, minorsPath: disc.MIGMinorsPath})
}

// run is Run with its dependencies injected; nvmlLib is the host path of the
// NVML library that CDI specs mount into containers, mig creates and
// destroys dynamic MIG devices.
func run(ctx context.Context, cfg Config, client kubernetes.Interface, disc Discoverer, nvmlLib string, mig *migOps) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	pluginDir := cfg.EffectiveKubeletPluginDir()
	hw := &hardware{
		driverName:     cfg.DriverName,
		poolName:       cfg.NodeName,
		disc:           disc,
		driverRoot:     cfg.DriverRoot,
		nvmlLib:        nvmlLib,
		mig:            mig,
		partitionAlpha: cfg.PartitionableAlpha,
	}
	hcfg := harnessConfig(cfg.DriverName, cfg.NodeName, pluginDir, cfg.CDIDir)
	hcfg.Client = client
	hcfg.RegistrarDir = cfg.KubeletRegistrarDir
	hcfg.PluginDir = pluginDir
	hcfg.RunningLog = func() []any {
		return []any{"gpus", len(hw.inventory.GPUs), "registrarDir", cfg.KubeletRegistrarDir, "pluginDir", pluginDir,
			"cdiDir", cfg.CDIDir, "driverRoot", cfg.DriverRoot}
	}
	return pluginharness.Run[preparedDevice](ctx, hw, hcfg)
}

// harnessConfig is the plugin's configuration: the checkpoint in the
// plugin directory, with a checksum, and the MIG wording of the start-up
// cleanup.
func harnessConfig(driverName, nodeName, pluginDir, cdiDir string) pluginharness.Config {
	return pluginharness.Config{
		DriverName:        driverName,
		NodeName:          nodeName,
		CDIDir:            cdiDir,
		CheckpointDir:     pluginDir,
		CheckpointVersion: checkpointVersion,
		Checksum:          true,
		UndoneLog:         "Destroyed the MIG devices of an unfinished prepare",
	}
}
