// Command drakit-plain-driver is drakit's plain DRA driver
// (reference/plaindriver), the kubelet plugin of the plain driver
// DaemonSet. It maps flags (each with an environment twin; a flag given on
// the command line wins) onto plaindriver.Config and calls plaindriver.Run
// until SIGTERM or SIGINT.
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

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/plaindriver"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "drakit-plain-driver:", err)
		klog.Flush()
		os.Exit(1)
	}
}

// parse maps args and the environment onto a Config and the logging
// configuration; help is true when --help was asked for.
func parse(args []string) (cfg plaindriver.Config, logging *logsapi.LoggingConfiguration, help bool, err error) {
	cfg = plaindriver.DefaultConfig()
	logging = logsapi.NewLoggingConfiguration()
	fs := pflag.NewFlagSet("drakit-plain-driver", pflag.ContinueOnError)
	str := func(p *string, name, env, usage string) {
		if v, ok := os.LookupEnv(env); ok {
			*p = v
		}
		fs.StringVar(p, name, *p, usage+" (env "+env+")")
	}
	str(&cfg.DriverName, "driver-name", "DRIVER_NAME", "DRA driver name")
	str(&cfg.NodeName, "node-name", "NODE_NAME", "name of the Node this driver runs on (required)")
	str(&cfg.StateDir, "state-dir", "STATE_DIR", "the driver's directory: checkpoint and devices/<device>/serial, mounted into containers")
	str(&cfg.KubeletRegistrarDir, "kubelet-registrar-dir", "KUBELET_REGISTRAR_DIR", "kubelet plugin registration directory")
	str(&cfg.KubeletPluginDir, "kubelet-plugin-dir", "KUBELET_PLUGIN_DIR", "directory of the DRA socket; empty: /var/lib/kubelet/plugins/<driver-name>")
	str(&cfg.CDIDir, "cdi-dir", "CDI_DIR", "directory the container runtime reads CDI specs from")
	str(&cfg.Kubeconfig, "kubeconfig", "KUBECONFIG", "kubeconfig file; empty: in-cluster configuration")
	if v, ok := os.LookupEnv("DEVICES"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return cfg, nil, false, fmt.Errorf("parse env DEVICES=%q: %w", v, err)
		}
		cfg.Devices = n
	}
	fs.IntVar(&cfg.Devices, "devices", cfg.Devices, "number of devices to publish, dev-0 … dev-<n-1> (env DEVICES)")
	if v, ok := os.LookupEnv("DEFECT"); ok {
		cfg.Defect = plaindriver.Defect(v)
	}
	known := make([]string, 0, len(plaindriver.Defects()))
	for _, d := range plaindriver.Defects() {
		known = append(known, string(d))
	}
	fs.StringVar((*string)(&cfg.Defect), "defect", string(cfg.Defect),
		"a deliberate bug for the conformance kit to catch: "+strings.Join(known, ", ")+"; empty: none (env DEFECT)")
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
	ctx = klog.NewContext(ctx, klog.Background().WithName("drakit-plain-driver"))
	return plaindriver.Run(ctx, cfg)
}
