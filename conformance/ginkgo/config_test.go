package ginkgo

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"drakit.dev/drakit/conformance"
)

// TestFlagsClientFlags: --drakit.context and --drakit.request-timeout fill
// the Config's KubeContext and RequestTimeout; a bad timeout is an error
// naming the flag.
func TestFlagsClientFlags(t *testing.T) {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	v := Flags(fs)
	cfg := &v.Config
	if cfg.KubeContext != "" || cfg.RequestTimeout != 0 {
		t.Errorf("defaults: context %q, timeout %v; want the current-context and no timeout", cfg.KubeContext, cfg.RequestTimeout)
	}
	if err := fs.Parse([]string{"--drakit.kubeconfig", "/k", "--drakit.context", "b", "--drakit.request-timeout", "3s"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Kubeconfig != "/k" || cfg.KubeContext != "b" || cfg.RequestTimeout != 3*time.Second {
		t.Errorf("parsed: kubeconfig %q, context %q, timeout %v; want /k, b, 3s", cfg.Kubeconfig, cfg.KubeContext, cfg.RequestTimeout)
	}

	fs = flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	Flags(fs)
	if err := fs.Parse([]string{"--drakit.request-timeout", "bogus"}); err == nil || !strings.Contains(err.Error(), "drakit.request-timeout") {
		t.Errorf("--drakit.request-timeout bogus: %v, want an error naming the flag", err)
	}
}

// TestFlagsDescribeTheDriver: --drakit.driver-config and the driver flags
// after it make the Config's declaration, the flags winning; a Declaration
// already set is kept; a missing file is an error.
func TestFlagsDescribeTheDriver(t *testing.T) {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	v := Flags(fs)
	if err := fs.Parse([]string{"--drakit.driver-config", "../../docs/examples/reference-driver.yaml", "--drakit.device-class", "mine.example.com",
		"--drakit.set", "driver.version=v9"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := v.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Declaration.KitSettings()
	if s.DriverName != "gpu.drakit.dev" || s.PartitionClassName == "" || s.DeviceClassName != "mine.example.com" || s.DriverVersion != "v9" {
		t.Errorf("settings %+v: want the file's driver with device class mine.example.com and version v9", s)
	}
	v.Config.Declaration = cfg.Declaration
	v.DriverConfig = "missing.yaml"
	if again, err := v.Resolved(); err != nil || again.Declaration != cfg.Declaration {
		t.Errorf("a Declaration set: %v, not kept", err)
	}
	v.Config.Declaration = nil
	if _, err := v.Resolved(); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing declaration: %v, want an error naming it", err)
	}
}

// TestFlagsBindTheScenarioSettings: the Go test's flags are
// conformance.ScenarioFlags under the prefix, switches without a value
// included, and fill the Config.
func TestFlagsBindTheScenarioSettings(t *testing.T) {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	v := Flags(fs)
	cfg := conformance.DefaultConfig()
	conformance.ScenarioFlags(&cfg).VisitAll(func(fl *flag.Flag) {
		if fs.Lookup(FlagPrefix+fl.Name) == nil {
			t.Errorf("--%s%s is not bound", FlagPrefix, fl.Name)
		}
	})
	if err := fs.Parse([]string{"--drakit.fail-on-skip", "--drakit.probe-host-network", "--drakit.pod-start-timeout", "3s", "--drakit.node-cdi-dir", "/c"}); err != nil {
		t.Fatal(err)
	}
	if c := v.Config; !c.FailOnSkip || !c.ProbeHostNetwork || c.Timeouts.PodStart != 3*time.Second || c.NodeCDIDir != "/c" {
		t.Errorf("config %+v: want fail-on-skip, host network, 3s pod start, CDI dir /c", c)
	}
}
