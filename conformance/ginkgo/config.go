package ginkgo

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	gk "github.com/onsi/ginkgo/v2"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/declaration"
)

// FlagPrefix starts the names of the flags Flags binds, so that they sit
// beside Ginkgo's (ginkgo.) and the test's own.
const FlagPrefix = "drakit."

// FlagValues are the kit's settings from the flags Flags binds.
type FlagValues struct {
	// Config is the run's configuration but the driver.
	Config conformance.Config
	// DriverConfig is the driver declaration's file (--drakit.driver-config);
	// empty: the driver flags alone describe the driver.
	DriverConfig string
	// driver collects the driver flags (--drakit.driver, --drakit.set, …).
	driver declaration.Overrides
}

// Resolved is Config with the driver under test: its Declaration as set,
// or else the declaration of DriverConfig with the driver flags written
// over it (declaration.Overrides).
func (v *FlagValues) Resolved() (conformance.Config, error) {
	cfg := v.Config
	if cfg.Declaration != nil {
		return cfg, nil
	}
	d, err := v.driver.Declaration(v.DriverConfig)
	if err != nil {
		return cfg, err
	}
	cfg.Declaration = d
	return cfg, nil
}

// Flags binds the kit's settings to flags of fs, named FlagPrefix and the
// drakit conformance command's flag (--drakit.kubeconfig, --drakit.context,
// --drakit.request-timeout, --drakit.driver-config, --drakit.driver,
// --drakit.set, --drakit.node-cdi-dir, …), with that command's defaults,
// environment variables included, and returns the values they fill once
// fs is parsed (for a test binary, flag.CommandLine: go test parses it
// before the tests run). ArtifactsDir defaults to $ARTIFACTS, else empty:
// a temporary directory.
func Flags(fs *flag.FlagSet) *FlagValues {
	v := &FlagValues{driver: declaration.Overrides{Prefix: FlagPrefix}}
	cfg := &v.Config
	*cfg = conformance.DefaultConfig()
	cfg.Kubeconfig = os.Getenv("DRAKIT_KUBECONFIG")
	cfg.NodeCDIDir = os.Getenv("DRAKIT_CDI_DIR")
	cfg.NodeEmulatorRoot = os.Getenv("DRAKIT_EMULATOR_ROOT")
	cfg.NodeKubeletRootDir = os.Getenv("DRAKIT_KUBELET_ROOT_DIR")
	cfg.ArtifactsDir = os.Getenv("ARTIFACTS")
	f := func(name string) string { return FlagPrefix + name }
	fs.StringVar(&cfg.Kubeconfig, f("kubeconfig"), cfg.Kubeconfig, "kubeconfig of the cluster under test ($DRAKIT_KUBECONFIG)")
	fs.StringVar(&cfg.KubeContext, f("context"), cfg.KubeContext, "kubeconfig context the kit's clients use (default: the kubeconfig's current-context)")
	fs.DurationVar(&cfg.RequestTimeout, f("request-timeout"), cfg.RequestTimeout, "how long a single request of the kit's clients to the API server may take (0: no limit)")
	fs.StringVar(&v.DriverConfig, f("driver-config"), "", "driver declaration (conformance.drakit.dev/v1alpha1 DriverDeclaration, see drakit's docs/examples/); the driver flags below write over it")
	for _, df := range declaration.Flags() {
		fs.Var(v.driver.Value(df), f(df.Name), declaration.FlagUsage(df))
	}
	fs.Var(v.driver.SetValue(), f(declaration.SetFlag), declaration.SetFlagUsage)
	conformance.ScenarioFlags(cfg).VisitAll(func(fl *flag.Flag) { fs.Var(fl.Value, f(fl.Name), fl.Usage) })
	return v
}

// openSession opens cfg's session, the
// kit's output going to GinkgoWriter and its reports to cfg.ArtifactsDir
// or a new temporary directory.
func openSession(ctx context.Context, cfg conformance.Config) (session, settings, error) {
	var err error
	if cfg.ArtifactsDir == "" {
		if cfg.ArtifactsDir, err = os.MkdirTemp("", "drakit-conformance-"); err != nil {
			return nil, settings{}, fmt.Errorf("create an artifacts directory: %w", err)
		}
	}
	artifacts, err := filepath.Abs(cfg.ArtifactsDir)
	if err != nil {
		return nil, settings{}, fmt.Errorf("resolve artifacts directory %s: %w", cfg.ArtifactsDir, err)
	}
	cfg.Output = gk.GinkgoWriter
	x, err := conformance.Open(ctx, cfg)
	if err != nil {
		return nil, settings{}, err
	}
	return x, settings{artifacts: artifacts, failOnSkip: cfg.FailOnSkip}, nil
}
