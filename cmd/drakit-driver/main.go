// Command drakit-driver is the one binary of drakit's reference DRA driver
// family, run by the chart deployments/helm/drakit-driver:
//
//	drakit-driver --kind gpu|nic|cpu|tpu|plain [flags]   the kind's kubelet plugin (DaemonSet)
//	drakit-driver controller --kind gpu|tpu [flags]      the kind's cluster-level controller (Deployment)
//
// --kind (environment DRIVER_KIND) picks the driver, gpu by default:
// reference/driver, nicdriver, cpudriver, tpudriver or plaindriver, each
// keeping its own logic. The flags every driver on the kubelet plugin
// harness has are bound once, to the part of the kind's Config they share
// (pluginharness.Kubelet); each kind's file binds only what the kind alone
// has. Every flag has an environment twin; a flag given on the command
// line wins. The plugin runs until SIGTERM or SIGINT. The controllers are
// the GPU driver's IMEX channel controller (reference/imex) and the TPU
// driver's sub-slice controller.
package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/reference/pluginharness"
)

func main() { drivercmd.Main("drakit-driver", run) }

// kind is one driver of the family, as the command runs it.
type kind struct {
	// plugin binds the kind's own flags to a new Config of the kind
	// (its defaults) and returns it, its Kubelet, whose flags the command
	// binds, and the driver's Run with that Config.
	plugin func(f *drivercmd.Flags) (cfg any, kubelet *pluginharness.Kubelet, run func(ctx context.Context) error)
	// controller binds the kind's controller's own flags to a new
	// configuration and returns it, its driver name and kubeconfig, whose
	// flags the command binds, and its Run; nil: the kind has none.
	controller func(f *drivercmd.Flags) (cfg any, driverName, kubeconfig *string, run func(ctx context.Context) error)
}

// kinds are the drivers of the family, by --kind.
var kinds = map[string]kind{
	"gpu":   {plugin: gpuPlugin, controller: imexController},
	"nic":   {plugin: nicPlugin},
	"cpu":   {plugin: cpuPlugin},
	"tpu":   {plugin: tpuPlugin, controller: tpuController},
	"plain": {plugin: plainPlugin},
}

// kindNames are the kinds, sorted.
func kindNames() string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// kindOf is --kind (or its twin DRIVER_KIND; default gpu) of args, read
// before the other flags, which depend on it.
func kindOf(args []string) string {
	k := "gpu"
	f := drivercmd.New("kind")
	f.String(&k, "kind", "DRIVER_KIND", "")
	fs := f.FlagSet()
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	_ = fs.Parse(args) // the real parse reports every error
	return k
}

func run(args []string) error {
	controller := len(args) > 0 && args[0] == "controller"
	if controller {
		args = args[1:]
	}
	name := kindOf(args)
	k, ok := kinds[name]
	if !ok {
		return fmt.Errorf("--kind %q: want %s", name, kindNames())
	}
	command := "drakit-driver"
	if controller {
		command += " controller"
	}
	f := drivercmd.New(command)
	f.String(&name, "kind", "DRIVER_KIND", "the driver: "+kindNames())
	var runKind func(ctx context.Context) error
	switch {
	case !controller:
		var kubelet *pluginharness.Kubelet
		_, kubelet, runKind = k.plugin(f)
		f.Kubelet(kubelet)
	case k.controller == nil:
		return fmt.Errorf("--kind %s has no controller (gpu and tpu have)", name)
	default:
		var driverName, kubeconfig *string
		_, driverName, kubeconfig, runKind = k.controller(f)
		f.String(driverName, "driver-name", "DRIVER_NAME", "DRA driver name")
		f.String(kubeconfig, "kubeconfig", "KUBECONFIG", "kubeconfig file; empty: in-cluster configuration")
	}
	logging, help, err := f.Parse(args)
	if err != nil || help {
		return err
	}
	logger := "drakit-" + name + "-driver"
	if controller {
		logger = "drakit-" + name + "-controller"
	}
	return drivercmd.Run(logger, logging, runKind)
}
