package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/reference/nicdriver"
	"drakit.dev/drakit/reference/pluginharness"
)

// nicPlugin is --kind nic: the NIC driver (reference/nicdriver) and its
// own flags.
func nicPlugin(f *drivercmd.Flags) (any, *pluginharness.Kubelet, func(context.Context) error) {
	cfg := nicdriver.DefaultConfig()
	f.String(&cfg.HostRoot, "host-root", "HOST_ROOT", `root of the node's sysfs and device nodes: "/" on a real node, the emulator root otherwise`)
	f.String(&cfg.SysfsRoot, "sysfs-root", "SYSFS_ROOT", "sysfs to discover NICs in and create VFs through (writable); empty: <host-root>/sys")
	f.Int(&cfg.VFsPerPF, "vfs-per-pf", "VFS_PER_PF",
		fmt.Sprintf("VFs published (and created on first use) per PF, at most its sriov_totalvfs, 0 to %d", nicdriver.MaxVFsPerPF))
	f.Duration(&cfg.VFTimeout, "vf-timeout", "VF_TIMEOUT", "how long to wait for VFs to appear or go after writing sriov_numvfs, at most 40s")
	f.Bool(&cfg.DeviceStatus, "device-status", "DEVICE_STATUS",
		"write the claims' status.devices entries of this driver when preparing (KEP-4817)")
	if v, ok := os.LookupEnv("DEVICE_IPS"); ok && v != "" {
		ips, err := parseDeviceIPs(v)
		if err != nil {
			f.Fail(fmt.Errorf("parse env DEVICE_IPS=%q: %w", v, err))
		} else {
			cfg.DeviceIPs = ips
		}
	}
	f.FlagSet().StringToStringVar(&cfg.DeviceIPs, "device-ips", cfg.DeviceIPs,
		"IP address (CIDR) to report in networkData.ips per device, <device>=<cidr>,…; none assigned otherwise (env DEVICE_IPS)")
	return &cfg, &cfg.Kubelet, func(ctx context.Context) error { return nicdriver.Run(ctx, cfg) }
}

// parseDeviceIPs parses <device>=<cidr>,….
func parseDeviceIPs(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not <device>=<cidr>", kv)
		}
		out[k] = v
	}
	return out, nil
}
