package drivercmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/internal/logflags"
	"drakit.dev/drakit/reference/pluginharness"
)

// Flags is a command's flag set whose flags have environment twins.
type Flags struct {
	fs      *pflag.FlagSet
	logging *logflags.Logging
	err     error // the first twin that did not parse
	// httpEndpoint is --http-endpoint's value, checked after parsing.
	httpEndpoint *string
}

// New returns the flags of the command name, with the logging flags.
func New(name string) *Flags {
	return &Flags{fs: pflag.NewFlagSet(name, pflag.ContinueOnError), logging: logflags.New()}
}

// FlagSet is the flag set, for a flag whose twin is read differently.
func (f *Flags) FlagSet() *pflag.FlagSet { return f.fs }

// Fail records err as the error of a twin that did not parse (the first
// one wins).
func (f *Flags) Fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

// lookup reads env into *p with parse when the variable is set.
func lookup[T any](f *Flags, p *T, env string, parse func(string) (T, error)) {
	v, ok := os.LookupEnv(env)
	if !ok {
		return
	}
	x, err := parse(v)
	if err != nil {
		f.Fail(fmt.Errorf("parse env %s=%q: %w", env, v, err))
		return
	}
	*p = x
}

// String adds the string flag name with twin env.
func (f *Flags) String(p *string, name, env, usage string) {
	lookup(f, p, env, func(v string) (string, error) { return v, nil })
	f.fs.StringVar(p, name, *p, usage+" (env "+env+")")
}

// Int adds the int flag name with twin env.
func (f *Flags) Int(p *int, name, env, usage string) {
	lookup(f, p, env, strconv.Atoi)
	f.fs.IntVar(p, name, *p, usage+" (env "+env+")")
}

// Bool adds the bool flag name with twin env.
func (f *Flags) Bool(p *bool, name, env, usage string) {
	lookup(f, p, env, strconv.ParseBool)
	f.fs.BoolVar(p, name, *p, usage+" (env "+env+")")
}

// Duration adds the duration flag name with twin env.
func (f *Flags) Duration(p *time.Duration, name, env, usage string) {
	lookup(f, p, env, time.ParseDuration)
	f.fs.DurationVar(p, name, *p, usage+" (env "+env+")")
}

// Var adds the flag name of value v, whose Set parses it, with twin env.
func (f *Flags) Var(v pflag.Value, name, env, usage string) {
	lookup(f, &v, env, func(s string) (pflag.Value, error) { return v, v.Set(s) })
	f.fs.Var(v, name, usage+" (env "+env+")")
}

// Kubelet adds the flags of what every driver on the kubelet plugin
// harness has (pluginharness.Kubelet, which each driver's Config embeds):
// --driver-name, --node-name, --kubelet-registrar-dir,
// --kubelet-plugin-dir, --cdi-dir, --kubeconfig and --http-endpoint, which
// Parse refuses unless it is empty or a loopback host:port.
func (f *Flags) Kubelet(k *pluginharness.Kubelet) {
	f.String(&k.DriverName, "driver-name", "DRIVER_NAME", "DRA driver name")
	f.String(&k.NodeName, "node-name", "NODE_NAME", "name of the Node this driver runs on (required)")
	f.String(&k.KubeletRegistrarDir, "kubelet-registrar-dir", "KUBELET_REGISTRAR_DIR", "kubelet plugin registration directory")
	f.String(&k.KubeletPluginDir, "kubelet-plugin-dir", "KUBELET_PLUGIN_DIR",
		"the driver's directory below the kubelet's plugins (DRA socket, checkpoints); empty: /var/lib/kubelet/plugins/<driver-name>")
	f.String(&k.CDIDir, "cdi-dir", "CDI_DIR", "directory the container runtime reads CDI specs from")
	f.String(&k.Kubeconfig, "kubeconfig", "KUBECONFIG", "kubeconfig file; empty: in-cluster configuration")
	f.String(&k.HTTPEndpoint, "http-endpoint", "HTTP_ENDPOINT",
		"loopback host:port (127.0.0.0/8 or [::1]) to serve Prometheus /metrics and /healthz on; empty: none")
	f.httpEndpoint = &k.HTTPEndpoint
}

// Parse returns the first twin that did not parse, else parses args; help
// is true when --help was asked for. logging is the logging
// configuration (nil with an error).
func (f *Flags) Parse(args []string) (logging *logflags.Logging, help bool, err error) {
	if f.err != nil {
		return nil, false, f.err
	}
	f.logging.AddFlags(f.fs)
	if err := f.fs.Parse(args); errors.Is(err, pflag.ErrHelp) {
		return f.logging, true, nil
	} else if err != nil {
		return nil, false, err
	}
	if f.fs.NArg() > 0 {
		return nil, false, fmt.Errorf("unexpected arguments %q", f.fs.Args())
	}
	if f.httpEndpoint != nil {
		if err := pluginharness.CheckHTTPEndpoint(*f.httpEndpoint); err != nil {
			return nil, false, fmt.Errorf("--http-endpoint: %w", err)
		}
	}
	return f.logging, false, nil
}

// Run applies logging and runs run with a context that ends at SIGTERM or
// SIGINT and carries a logger named name.
func Run(name string, logging *logflags.Logging, run func(ctx context.Context) error) error {
	if err := logging.Apply(); err != nil {
		return err
	}
	defer klog.Flush()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return run(logflags.Context(ctx, name))
}

// Main runs run with the command's arguments; on error it prints it once,
// prefixed with name, and exits 1.
func Main(name string, run func(args []string) error) {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		klog.Flush()
		os.Exit(1)
	}
}
