// Command drakit-driver is drakit's reference DRA driver, the kubelet plugin
// of the driver DaemonSet. It maps flags (each with an environment twin; a
// flag given on the command line wins) onto driver.Config and calls
// driver.Run until SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/driver"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "drakit-driver:", err)
		klog.Flush()
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg := driver.DefaultConfig()
	logging := logsapi.NewLoggingConfiguration()
	fs := pflag.NewFlagSet("drakit-driver", pflag.ContinueOnError)
	str := func(p *string, name, env, usage string) {
		if v, ok := os.LookupEnv(env); ok {
			*p = v
		}
		fs.StringVar(p, name, *p, usage+" (env "+env+")")
	}
	str(&cfg.DriverName, "driver-name", "DRIVER_NAME", "DRA driver name")
	str(&cfg.NodeName, "node-name", "NODE_NAME", "name of the Node this driver runs on (required)")
	str(&cfg.DriverRoot, "driver-root", "DRIVER_ROOT", `NVIDIA driver root: "/" on a real node, the emulator root otherwise`)
	str(&cfg.SysfsRoot, "sysfs-root", "SYSFS_ROOT", "sysfs to read PCI topology from; empty: <driver-root>/sys")
	str(&cfg.KubeletRegistrarDir, "kubelet-registrar-dir", "KUBELET_REGISTRAR_DIR", "kubelet plugin registration directory")
	str(&cfg.KubeletPluginDir, "kubelet-plugin-dir", "KUBELET_PLUGIN_DIR", "driver data directory (DRA socket, checkpoint); empty: /var/lib/kubelet/plugins/<driver-name>")
	str(&cfg.CDIDir, "cdi-dir", "CDI_DIR", "directory the container runtime reads CDI specs from")
	str(&cfg.Kubeconfig, "kubeconfig", "KUBECONFIG", "kubeconfig file; empty: in-cluster configuration")
	if v, ok := os.LookupEnv("PARTITIONABLE_ALPHA"); ok {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("env PARTITIONABLE_ALPHA=%q: %w", v, err)
		}
		cfg.PartitionableAlpha = on
	}
	fs.BoolVar(&cfg.PartitionableAlpha, "partitionable-alpha", cfg.PartitionableAlpha,
		"publish the alpha fields of partitionable devices (partitionTypeAttribute, compatibility groups; KEPs 5677/5963) (env PARTITIONABLE_ALPHA)")
	logsapi.AddFlags(logging, fs)
	if err := fs.Parse(args); errors.Is(err, pflag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := logsapi.ValidateAndApply(logging, nil); err != nil {
		return fmt.Errorf("apply logging flags: %w", err)
	}
	defer klog.Flush()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("drakit-driver"))
	return driver.Run(ctx, cfg)
}
