package kit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cucumber/godog"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

// Report files in ArtifactsDir.
const (
	JUnitFile    = "junit.xml"
	CucumberFile = "cucumber.json"
	SummaryFile  = "summary.txt"
	ReportFile   = "conformance-report.yaml"
)

// Result is the outcome of a run.
type Result = report.Result

// resourceGroupVersion is the DRA API the kit uses.
const resourceGroupVersion = "resource.k8s.io/v1"

// ErrNoScenarios is returned when the tag filter selects no scenario: a run
// that checked nothing certifies nothing.
var ErrNoScenarios = errors.New("no scenario matches the tag filter")

// Verdict is the judgement of a run (report.Judge).
type Verdict = report.Verdict

// Run runs the features, with the kit's steps and those of groups, against
// the cluster and driver of cfg, writes the reports and prints the summary
// to cfg.Output, and returns the run's verdict, which every report states. An error means the run could not
// take place, or selected no scenario (ErrNoScenarios: the verdict says
// so).
func Run(ctx context.Context, cfg Config, groups ...StepGroup) (Verdict, error) {
	s, err := newSuite(cfg, groups)
	if err != nil {
		return Verdict{}, err
	}
	_, v, err := s.run(ctx)
	return v, err
}

// newSuite validates cfg, checks that the cluster answers and serves the
// DRA API (preflight) and creates the suite's clients.
func newSuite(cfg Config, groups []StepGroup) (*Suite, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	artifacts, err := filepath.Abs(cfg.ArtifactsDir)
	if err != nil {
		return nil, fmt.Errorf("resolve artifacts directory %s: %w", cfg.ArtifactsDir, err)
	}
	restCfg, err := loadKubeconfig(cfg)
	if err != nil {
		return nil, err
	}
	server, version, err := preflight(restCfg, cfg.Timeouts)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("create client for %s: %w", restCfg.Host, err)
	}
	host, port, err := apiServerAddress(cfg, restCfg.Host)
	if err != nil {
		return nil, err
	}
	s := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: kube, apiHost: host, apiPort: port, artifacts: artifacts, features: features.FS, server: server, kubernetesVersion: version,
		Impersonate: impersonator(restCfg), stepGroups: groups}
	return s, nil
}

// tags is the run's tag filter: Config.Tags, or the declaration's
// scenarios.tags when the run gives none.
func (s *Suite) tags() string {
	if s.Cfg.Tags != "" {
		return s.Cfg.Tags
	}
	return s.Driver.Tags
}

// run runs the suite's features with godog and writes the reports.
func (s *Suite) run(ctx context.Context) (Result, Verdict, error) {
	cfg := s.Cfg
	tags, err := report.Filter(cfg.Profile, s.tags())
	if err != nil {
		return Result{}, Verdict{}, err
	}
	seed := cfg.Randomize
	if seed == -1 {
		seed = rand.Int64N(1<<62) + 1
	}
	stop := make(chan struct{})
	defer close(stop)
	if err := s.prepare(ctx, stop); err != nil {
		return Result{}, Verdict{}, err
	}
	selected, err := report.Selected(s.features, tags)
	if err != nil {
		return Result{}, Verdict{}, err
	}
	s.progress = newProgress(len(selected), cfg.Output, cfg.Format == "progress")
	klog.FromContext(ctx).Info("Running conformance features", "scenarios", len(selected), "concurrency", cfg.Concurrency, "driver", s.Driver.DriverName, "server", s.server, "tags", tags, "seed", seed, "artifacts", s.artifacts)
	cucumber := filepath.Join(s.artifacts, CucumberFile)
	opts := godog.Options{
		Format:         fmt.Sprintf("%s,cucumber:%s", formatName(cfg.Format), cucumber),
		Output:         s.progress.writer(cfg.Output),
		NoColors:       cfg.NoColors,
		FS:             s.features,
		Paths:          []string{"."},
		Strict:         true,
		Tags:           tags,
		Randomize:      seed,
		Concurrency:    cfg.Concurrency,
		TestingT:       cfg.TestingT,
		DefaultContext: ctx,
	}
	status := godog.TestSuite{Name: "drakit", ScenarioInitializer: s.initScenario, Options: &opts}.Run()
	if status > 1 {
		return Result{}, Verdict{}, fmt.Errorf("run features: godog could not start (status %d, reason on stderr)", status)
	}
	f, err := os.Open(cucumber)
	if err != nil {
		return Result{}, Verdict{}, fmt.Errorf("read the cucumber report: %w", err)
	}
	defer f.Close()
	res, err := report.ParseCucumberJSON(f)
	if err != nil {
		return Result{}, Verdict{}, fmt.Errorf("read the cucumber report %s: %w", cucumber, err)
	}
	res.Seed = seed
	return s.finish(ctx, res, tags)
}

// prepare readies the artifacts directory and the cluster for a run: the
// previous run's reports go, the slice informer starts (until stop is
// closed) and the DeviceTaintRules a killed run left behind are deleted.
func (s *Suite) prepare(ctx context.Context, stop <-chan struct{}) error {
	if err := os.MkdirAll(filepath.Join(s.artifacts, diagnosticsDir), 0o755); err != nil {
		return fmt.Errorf("create artifacts directory: %w", err)
	}
	for _, f := range []string{CucumberFile, JUnitFile, SummaryFile, ReportFile} {
		if err := os.Remove(filepath.Join(s.artifacts, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the previous report: %w", err)
		}
	}
	if err := s.startSliceInformer(ctx, stop); err != nil {
		return err
	}
	return s.removeLeftoverRules(ctx)
}

// finish judges a run's Result once and writes its reports (cucumber.json
// is written already) with that verdict, prints the summary to Output,
// which ends with the verdict's line, and returns res and the verdict;
// ErrNoScenarios when no scenario ran.
func (s *Suite) finish(ctx context.Context, res Result, tags string) (Result, Verdict, error) {
	cfg, drv := s.Cfg, s.Driver
	res.SkipsFail = cfg.FailOnSkip
	v := report.Judge(res)
	if err := writeFile(filepath.Join(s.artifacts, JUnitFile), func(w io.Writer) error { return report.WriteJUnit(w, res) }); err != nil {
		return res, v, err
	}
	kinds := drv.deviceKinds()
	in := report.Input{Driver: drv.DriverName, DriverVersion: s.driverVersion(ctx), KubernetesVersion: s.kubernetesVersion,
		FeatureGates: s.featureGates(ctx), DeviceKinds: kinds, Profile: cfg.Profile, Tags: tags, Hardware: drv.Hardware, Features: s.features}
	if err := writeFile(filepath.Join(s.artifacts, ReportFile), func(w io.Writer) error { return report.WriteConformanceReport(w, in, res, v) }); err != nil {
		return res, v, err
	}
	header := report.SummaryHeader{Driver: drv.DriverName, DeviceKinds: kinds, Tags: tags, Server: s.server, Hardware: drv.Hardware,
		Reports: []string{filepath.Join(s.artifacts, JUnitFile), filepath.Join(s.artifacts, CucumberFile), filepath.Join(s.artifacts, SummaryFile), filepath.Join(s.artifacts, ReportFile)}}
	var summary strings.Builder
	if err := report.WriteSummary(&summary, header, res, v); err != nil {
		return res, v, err
	}
	if err := os.WriteFile(filepath.Join(s.artifacts, SummaryFile), []byte(summary.String()), 0o644); err != nil {
		return res, v, fmt.Errorf("write summary: %w", err)
	}
	if _, err := fmt.Fprint(cfg.Output, "\n"+summary.String()); err != nil {
		return res, v, fmt.Errorf("print summary: %w", err)
	}
	if res.Total() == 0 {
		return res, v, fmt.Errorf("%w %q", ErrNoScenarios, tags)
	}
	return res, v, nil
}

// writeFile writes a report file through render.
func writeFile(path string, render func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := render(f); err != nil {
		f.Close()
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	return nil
}

// impersonator makes clients that act as another identity through the
// kit's credentials (which must be allowed to impersonate).
func impersonator(restCfg *rest.Config) func(rest.ImpersonationConfig) (kubernetes.Interface, error) {
	return func(as rest.ImpersonationConfig) (kubernetes.Interface, error) {
		c := rest.CopyConfig(restCfg)
		c.Impersonate = as
		kube, err := kubernetes.NewForConfig(c)
		if err != nil {
			return nil, fmt.Errorf("create client acting as %s: %w", as.UserName, err)
		}
		return kube, nil
	}
}

// loadKubeconfig reads cfg's kubeconfig, as kubectl with --context and
// --request-timeout would (the one place the kit makes its client
// configuration); a missing file is reported as such.
func loadKubeconfig(cfg Config) (*rest.Config, error) {
	if _, err := os.Stat(cfg.Kubeconfig); err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.Kubeconfig}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.KubeContext}
	restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	restCfg.Timeout = cfg.RequestTimeout
	restCfg.QPS, restCfg.Burst = 50, 100
	// Protocol buffers: a node's ResourceSlices are hundreds of kilobytes
	// that JSON would cost the API server and the kit more to encode.
	restCfg.ContentType = runtime.ContentTypeProtobuf
	restCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return restCfg, nil
}

// preflight checks, within the API timeout (the client's request timeout
// when that is smaller), that the API server answers and
// serves the DRA API, and returns a description of the server and its
// Kubernetes version.
func preflight(restCfg *rest.Config, timeouts Timeouts) (server, version string, err error) {
	dcfg := rest.CopyConfig(restCfg)
	if dcfg.Timeout == 0 || dcfg.Timeout > timeouts.API {
		dcfg.Timeout = timeouts.API
	}
	disc, err := discovery.NewDiscoveryClientForConfig(dcfg)
	if err != nil {
		return "", "", fmt.Errorf("create discovery client for %s: %w", restCfg.Host, err)
	}
	info, err := disc.ServerVersion()
	if err != nil {
		return "", "", fmt.Errorf("reach API server %s: %w", restCfg.Host, err)
	}
	if _, err := disc.ServerResourcesForGroupVersion(resourceGroupVersion); err != nil {
		return "", "", fmt.Errorf("API server %s (%s) does not serve %s, which DRA needs: %w", restCfg.Host, info.GitVersion, resourceGroupVersion, err)
	}
	return fmt.Sprintf("%s (Kubernetes %s)", restCfg.Host, info.GitVersion), info.GitVersion, nil
}

// apiServerAddress is what probe pods get as KUBERNETES_SERVICE_HOST/PORT:
// the configured values, else the kubeconfig server's.
func apiServerAddress(cfg Config, server string) (string, int, error) {
	host, port := cfg.APIServerHost, cfg.APIServerPort
	if host != "" && port != 0 {
		return host, port, nil
	}
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "", 0, fmt.Errorf("derive the API server address for pods from kubeconfig server %q: not a URL with a host; set the API server host and port", server)
	}
	if host == "" {
		host = u.Hostname()
	}
	if port == 0 {
		p := u.Port()
		if p == "" {
			p = "443"
			if u.Scheme == "http" {
				p = "80"
			}
		}
		port, err = strconv.Atoi(p)
		if err != nil {
			return "", 0, fmt.Errorf("derive the API server port for pods from kubeconfig server %q: %w", server, err)
		}
	}
	return host, port, nil
}
