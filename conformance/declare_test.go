package conformance

import (
	"testing"

	"drakit.dev/drakit/conformance/declaration"
)

// TestApplyDeclaration applies the env-only example driver's declaration:
// its settings replace the reference defaults (no partitions, no NVML, no
// per-device prefix), except a field given explicitly.
func TestApplyDeclaration(t *testing.T) {
	d, err := declaration.Load("../docs/examples/env-only-driver.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.DriverNamespace = "given"
	cfg.ApplyDeclaration(d, func(field string) bool { return field == "DriverNamespace" })
	if cfg.DriverName != "gpu.example.com" || cfg.PartitionClassName != "" || cfg.DeviceEnvPrefix != "" || !cfg.Hardware {
		t.Errorf("declared settings not applied: %+v", cfg)
	}
	if cfg.observes(declaration.ObserverNVML) || !cfg.observes(declaration.ObserverCDI) {
		t.Errorf("observers %v, want cdi and env without nvml", cfg.Observers)
	}
	if cfg.DriverNamespace != "given" {
		t.Errorf("DriverNamespace %q, want the explicit value kept", cfg.DriverNamespace)
	}
	if cfg.ProfileAttribute != DefaultProfileAttribute {
		t.Errorf("ProfileAttribute %q: a declaration without partitions must leave the default, so the config stays valid", cfg.ProfileAttribute)
	}
	cfg.Kubeconfig = "k"
	if err := cfg.Validate(); err != nil {
		t.Errorf("config after the declaration: %v", err)
	}
}
