package driver

import (
	"context"
	"sync"

	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/reference/pluginharness"
)

// Run discovers the GPUs, starts the kubelet plugin with its health
// service, publishes the node's pool, watches the GPUs' faults (taints,
// withdrawn devices, the health stream) and serves until ctx is canceled
// (then it returns nil) or a fatal error stops it.
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
	disc.ListAttributes = cfg.ListAttributes
	faults := func(gpus []GPU) (faultSource, error) {
		uuids := make([]string, 0, len(gpus))
		for _, g := range gpus {
			uuids = append(uuids, g.UUID)
		}
		return openNVMLFaults(disc.NVML, uuids)
	}
	return run(ctx, cfg, client, disc, lib, &migOps{lib: disc.NVML, minorsPath: disc.MIGMinorsPath}, faults)
}

// run is Run with its dependencies injected; nvmlLib is the host path of the
// NVML library that CDI specs mount into containers, mig creates and
// destroys dynamic MIG devices, faults opens the fault source of the
// discovered GPUs.
func run(ctx context.Context, cfg Config, client kubernetes.Interface, disc Discoverer, nvmlLib string, mig *migOps,
	faults func(gpus []GPU) (faultSource, error)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	pluginDir := cfg.EffectiveKubeletPluginDir()
	hw := &hardware{
		driverName:        cfg.DriverName,
		poolName:          cfg.NodeName,
		disc:              disc,
		driverRoot:        cfg.DriverRoot,
		nvmlLib:           nvmlLib,
		mig:               mig,
		partitionAlpha:    cfg.PartitionableAlpha,
		bindingConditions: cfg.BindingConditions,
		deviceNodesOnly:   cfg.DeviceNodesOnly,
	}
	hcfg := harnessConfig(cfg.DriverName, cfg.NodeName, pluginDir, cfg.CDIDir)
	hcfg.Client = client
	hcfg.RegistrarDir = cfg.KubeletRegistrarDir
	hcfg.PluginDir = pluginDir
	hcfg.Health = true
	hcfg.DeviceMetadata = cfg.DeviceMetadata
	hcfg.HTTPEndpoint = cfg.HTTPEndpoint
	hcfg.RunningLog = func() []any {
		return []any{"gpus", len(hw.inventory.GPUs), "registrarDir", cfg.KubeletRegistrarDir, "pluginDir", pluginDir,
			"cdiDir", cfg.CDIDir, "driverRoot", cfg.DriverRoot, "deviceMetadata", cfg.DeviceMetadata}
	}
	var watcher sync.WaitGroup
	defer watcher.Wait()
	return pluginharness.Serve(ctx, hcfg, func(ctx context.Context, hcfg pluginharness.Config) (pluginharness.Served, error) {
		p, err := pluginharness.New[preparedDevice, *preparedDevice](ctx, hw, hcfg)
		if err != nil {
			return nil, err
		}
		src, err := faults(hw.inventory.GPUs)
		if err != nil {
			return nil, err
		}
		mon, err := hw.newMonitor(src, p)
		if err != nil {
			return nil, err
		}
		// The first state is read before the pool is first published:
		// a restarted driver publishes its taints right away.
		mon.readAll(ctx)
		watcher.Go(func() { mon.run(ctx) })
		return &gpuPlugin{Plugin: p, health: mon}, nil
	})
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
