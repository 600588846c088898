// Command drakit-nic-driver is drakit's reference NIC DRA driver
// (reference/nicdriver), the kubelet plugin of the NIC driver DaemonSet. It
// ships in the reference driver's image beside drakit-driver. It maps flags
// (each with an environment twin; a flag given on the command line wins)
// onto nicdriver.Config and calls nicdriver.Run until SIGTERM or SIGINT.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/internal/logflags"
	"drakit.dev/drakit/reference/nicdriver"
)

func main() { drivercmd.Main("drakit-nic-driver", run) }

// parse maps args and the environment onto a Config and the logging
// configuration; help is true when --help was asked for.
func parse(args []string) (cfg nicdriver.Config, logging *logflags.Logging, help bool, err error) {
	cfg = nicdriver.DefaultConfig()
	f := drivercmd.New("drakit-nic-driver")
	f.Kubelet(drivercmd.Kubelet{
		DriverName: &cfg.DriverName, NodeName: &cfg.NodeName, KubeletRegistrarDir: &cfg.KubeletRegistrarDir,
		KubeletPluginDir: &cfg.KubeletPluginDir, CDIDir: &cfg.CDIDir, Kubeconfig: &cfg.Kubeconfig, HTTPEndpoint: &cfg.HTTPEndpoint,
		PluginDirUsage: "driver data directory (DRA socket, checkpoints)",
	})
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
	logging, help, err = f.Parse(args)
	return cfg, logging, help, err
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

func run(args []string) error {
	cfg, logging, help, err := parse(args)
	if err != nil || help {
		return err
	}
	return drivercmd.Run("drakit-nic-driver", logging, func(ctx context.Context) error { return nicdriver.Run(ctx, cfg) })
}
