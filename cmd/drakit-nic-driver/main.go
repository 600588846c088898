// Command drakit-nic-driver is drakit's reference NIC DRA driver
// (reference/nicdriver), the kubelet plugin of the NIC driver DaemonSet. It
// ships in the reference driver's image beside drakit-driver. It maps flags
// (each with an environment twin; a flag given on the command line wins)
// onto nicdriver.Config and calls nicdriver.Run until SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/nicdriver"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "drakit-nic-driver:", err)
		klog.Flush()
		os.Exit(1)
	}
}

// parse maps args and the environment onto a Config and the logging
// configuration; help is true when --help was asked for.
func parse(args []string) (cfg nicdriver.Config, logging *logsapi.LoggingConfiguration, help bool, err error) {
	cfg = nicdriver.DefaultConfig()
	logging = logsapi.NewLoggingConfiguration()
	fs := pflag.NewFlagSet("drakit-nic-driver", pflag.ContinueOnError)
	str := func(p *string, name, env, usage string) {
		if v, ok := os.LookupEnv(env); ok {
			*p = v
		}
		fs.StringVar(p, name, *p, usage+" (env "+env+")")
	}
	str(&cfg.DriverName, "driver-name", "DRIVER_NAME", "DRA driver name")
	str(&cfg.NodeName, "node-name", "NODE_NAME", "name of the Node this driver runs on (required)")
	str(&cfg.HostRoot, "host-root", "HOST_ROOT", `root of the node's sysfs and device nodes: "/" on a real node, the emulator root otherwise`)
	str(&cfg.SysfsRoot, "sysfs-root", "SYSFS_ROOT", "sysfs to discover NICs in and create VFs through (writable); empty: <host-root>/sys")
	str(&cfg.KubeletRegistrarDir, "kubelet-registrar-dir", "KUBELET_REGISTRAR_DIR", "kubelet plugin registration directory")
	str(&cfg.KubeletPluginDir, "kubelet-plugin-dir", "KUBELET_PLUGIN_DIR", "driver data directory (DRA socket, checkpoints); empty: /var/lib/kubelet/plugins/<driver-name>")
	str(&cfg.CDIDir, "cdi-dir", "CDI_DIR", "directory the container runtime reads CDI specs from")
	str(&cfg.Kubeconfig, "kubeconfig", "KUBECONFIG", "kubeconfig file; empty: in-cluster configuration")
	if v, ok := os.LookupEnv("VFS_PER_PF"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return cfg, nil, false, fmt.Errorf("parse env VFS_PER_PF=%q: %w", v, err)
		}
		cfg.VFsPerPF = n
	}
	fs.IntVar(&cfg.VFsPerPF, "vfs-per-pf", cfg.VFsPerPF,
		fmt.Sprintf("VFs published (and created on first use) per PF, at most its sriov_totalvfs, 0 to %d (env VFS_PER_PF)", nicdriver.MaxVFsPerPF))
	if v, ok := os.LookupEnv("VF_TIMEOUT"); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return cfg, nil, false, fmt.Errorf("parse env VF_TIMEOUT=%q: %w", v, err)
		}
		cfg.VFTimeout = d
	}
	fs.DurationVar(&cfg.VFTimeout, "vf-timeout", cfg.VFTimeout, "how long to wait for VFs to appear or go after writing sriov_numvfs, at most 40s (env VF_TIMEOUT)")
	if v, ok := os.LookupEnv("DEVICE_STATUS"); ok {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return cfg, nil, false, fmt.Errorf("parse env DEVICE_STATUS=%q: %w", v, err)
		}
		cfg.DeviceStatus = on
	}
	fs.BoolVar(&cfg.DeviceStatus, "device-status", cfg.DeviceStatus,
		"write the claims' status.devices entries of this driver when preparing (KEP-4817) (env DEVICE_STATUS)")
	if v, ok := os.LookupEnv("DEVICE_IPS"); ok && v != "" {
		ips, err := parseDeviceIPs(v)
		if err != nil {
			return cfg, nil, false, fmt.Errorf("parse env DEVICE_IPS=%q: %w", v, err)
		}
		cfg.DeviceIPs = ips
	}
	fs.StringToStringVar(&cfg.DeviceIPs, "device-ips", cfg.DeviceIPs,
		"IP address (CIDR) to report in networkData.ips per device, <device>=<cidr>,…; none assigned otherwise (env DEVICE_IPS)")
	logsapi.AddFlags(logging, fs)
	if err := fs.Parse(args); errors.Is(err, pflag.ErrHelp) {
		return cfg, logging, true, nil
	} else if err != nil {
		return cfg, nil, false, err
	}
	if fs.NArg() > 0 {
		return cfg, nil, false, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return cfg, logging, false, nil
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
	if err := logsapi.ValidateAndApply(logging, nil); err != nil {
		return fmt.Errorf("apply logging flags: %w", err)
	}
	defer klog.Flush()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("drakit-nic-driver"))
	return nicdriver.Run(ctx, cfg)
}
