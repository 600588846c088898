package environment

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/types"
)

// fakeProvider implements the e2e-framework provider interfaces,
// NodeAccess, NodeLayout and Runner, and records every call in order.
type fakeProvider struct {
	kubeconfig string
	nodes      []string
	// distinct gives every node its own paths.
	distinct bool
	running  bool
	// fail makes the calls whose record starts with a key fail.
	fail  map[string]error
	calls []string
}

var (
	_ types.E2EClusterProviderWithImageLoader = (*fakeProvider)(nil)
	_ NodeAccess                              = (*fakeProvider)(nil)
	_ NodeLayout                              = (*fakeProvider)(nil)
	_ Runner                                  = (*fakeProvider)(nil)
)

func (f *fakeProvider) call(record string) error {
	f.calls = append(f.calls, record)
	for prefix, err := range f.fail {
		if strings.HasPrefix(record, prefix) {
			return err
		}
	}
	return nil
}

func (f *fakeProvider) WithName(string) types.E2EClusterProvider               { return f }
func (f *fakeProvider) WithVersion(string) types.E2EClusterProvider            { return f }
func (f *fakeProvider) WithPath(string) types.E2EClusterProvider               { return f }
func (f *fakeProvider) WithOpts(...types.ClusterOpts) types.E2EClusterProvider { return f }
func (f *fakeProvider) SetDefaults() types.E2EClusterProvider                  { return f }
func (f *fakeProvider) GetKubeconfig() string                                  { return f.kubeconfig }
func (f *fakeProvider) GenerateKubeconfig(...string) (string, error)           { return f.kubeconfig, nil }
func (f *fakeProvider) GetKubectlContext() string                              { return "fake" }
func (f *fakeProvider) KubernetesRestConfig() *rest.Config                     { return nil }
func (f *fakeProvider) Running(context.Context) (bool, error)                  { return f.running, nil }

func (f *fakeProvider) Create(context.Context, ...string) (string, error) {
	return f.kubeconfig, f.call("create")
}

func (f *fakeProvider) CreateWithConfig(_ context.Context, file string) (string, error) {
	return f.kubeconfig, f.call("create-with-config " + file)
}

func (f *fakeProvider) WaitForControlPlane(context.Context, klient.Client) error {
	return f.call("wait")
}
func (f *fakeProvider) ExportLogs(_ context.Context, dest string) error {
	return f.call("export-logs " + dest)
}
func (f *fakeProvider) Destroy(ctx context.Context) error {
	if ctx.Err() != nil {
		return f.call("destroy with a canceled context")
	}
	return f.call("destroy")
}
func (f *fakeProvider) LoadImage(_ context.Context, image string, _ ...string) error {
	return f.call("load-image " + image)
}
func (f *fakeProvider) LoadImageArchive(_ context.Context, archive string, _ ...string) error {
	return f.call("load-archive " + archive)
}
func (f *fakeProvider) NodeNames(context.Context) ([]string, error) { return f.nodes, nil }
func (f *fakeProvider) RunOnNode(_ context.Context, node string, argv []string) error {
	return f.call(node + ": " + strings.Join(argv, " "))
}

func (f *fakeProvider) Node(_ context.Context, name string) (Node, error) {
	n := DefaultNode(name)
	if f.distinct {
		n.EmulatorRoot = "/emu/" + name
	}
	n.ShimLibrary = "/shim.so"
	return n, nil
}

// fakeDriver records its deployments in the provider's calls.
func fakeDriver(f *fakeProvider, name string) Driver {
	return Driver{Name: name, Apply: func(_ context.Context, _ kubernetes.Interface, n Node, pin string) error {
		return f.call("deploy " + name + " root=" + n.EmulatorRoot + " pin=" + pin)
	}}
}

// kubeconfig writes a kubeconfig of a server nothing listens on: the
// steps build clients from it, and the fake drivers never call them.
func kubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	const kc = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newFake(t *testing.T, nodes ...string) *fakeProvider {
	return &fakeProvider{kubeconfig: kubeconfig(t), nodes: nodes, fail: map[string]error{}}
}

func fullConfig(f *fakeProvider) Config {
	return Config{
		Provider: f, EmulatorProfile: "dgx-a100-mig", ImageArchives: []string{"/img/driver.tar", "/img/probe.tar"},
		Drivers: []Driver{fakeDriver(f, "gpu"), fakeDriver(f, "nic")}, ArtifactsDir: "/art",
	}
}

// TestRunOrder: Run creates, renders and starts the watcher on every node,
// loads the images, deploys the drivers, runs the body, then stops the
// watchers, exports the logs and destroys the cluster it created.
func TestRunOrder(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFake(t, "n1")
	e, err := New(fullConfig(f))
	if err != nil {
		t.Fatal(err)
	}
	ecfg := envconf.New()
	err = e.Run(ctx, ecfg, func(ctx context.Context, c *envconf.Config) (context.Context, error) {
		if c.KubeconfigFile() != f.kubeconfig {
			t.Errorf("body: kubeconfig %q, want the provider's %q", c.KubeconfigFile(), f.kubeconfig)
		}
		if _, ok := ctx.Value(types.ClusterNameContextKey("drakit")).(types.E2EClusterProvider); !ok {
			t.Error("body: the provider is not in the context under the cluster name")
		}
		return ctx, f.call("body")
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	root := "/var/lib/drakit/emulator"
	want := []string{
		"create", "wait",
		"n1: drakit emulator render --profile dgx-a100-mig --root " + root + " --shim /shim.so",
		"n1: drakit emulator watch --root " + root + " --detach --pid-file " + root + ".watch.pid --log /var/log/drakit/emulator-watch.log",
		"load-archive /img/driver.tar", "load-archive /img/probe.tar",
		"deploy gpu root=" + root + " pin=", "deploy nic root=" + root + " pin=",
		"body",
		"n1: drakit emulator watch --root " + root + " --stop --pid-file " + root + ".watch.pid",
		"export-logs /art/logs", "destroy",
	}
	if !slices.Equal(f.calls, want) {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(f.calls, "\n"), strings.Join(want, "\n"))
	}
}

// TestFinishRunsAfterAFailingSetupStep: a failing setup step stops setup
// (no later step, no body), every finish step still runs, and the errors
// of setup and of a failing finish step are both returned.
func TestFinishRunsAfterAFailingSetupStep(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFake(t, "n1", "n2")
	renderErr, exportErr := errors.New("no space left"), errors.New("disk gone")
	f.fail["n2: drakit emulator render"] = renderErr
	f.fail["export-logs"] = exportErr
	e, err := New(fullConfig(f))
	if err != nil {
		t.Fatal(err)
	}
	err = e.Run(ctx, envconf.New(), func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, f.call("body")
	})
	if !errors.Is(err, renderErr) || !errors.Is(err, exportErr) {
		t.Errorf("Run error %v: want both the render error and the export error", err)
	}
	if err != nil && !strings.Contains(err.Error(), "render emulator profile dgx-a100-mig on node n2") {
		t.Errorf("Run error %v: does not say which step failed on which node", err)
	}
	for _, c := range f.calls {
		if strings.Contains(c, "--detach") || strings.HasPrefix(c, "load-archive") || strings.HasPrefix(c, "deploy") || c == "body" {
			t.Errorf("ran %q after the render failed", c)
		}
	}
	// Every finish step ran, the watchers' stop on both nodes, the destroy
	// after the failed export.
	tail := f.calls[len(f.calls)-4:]
	want := []string{
		"n1: drakit emulator watch --root /var/lib/drakit/emulator --stop --pid-file /var/lib/drakit/emulator.watch.pid",
		"n2: drakit emulator watch --root /var/lib/drakit/emulator --stop --pid-file /var/lib/drakit/emulator.watch.pid",
		"export-logs /art/logs", "destroy",
	}
	if !slices.Equal(tail, want) {
		t.Errorf("finish calls:\n%s\nwant:\n%s", strings.Join(tail, "\n"), strings.Join(want, "\n"))
	}
}

// TestBodyErrorJoinedWithFinish: the body's error is returned, and the
// finish steps run after it.
func TestBodyErrorJoinedWithFinish(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFake(t, "n1")
	bodyErr := errors.New("conformance failed: 1 of 3 scenarios failed")
	e, err := New(Config{Provider: f})
	if err != nil {
		t.Fatal(err)
	}
	err = e.Run(ctx, envconf.New(), func(ctx context.Context, _ *envconf.Config) (context.Context, error) { return ctx, bodyErr })
	if !errors.Is(err, bodyErr) {
		t.Errorf("Run error %v, want the body's", err)
	}
	if f.calls[len(f.calls)-1] != "destroy" {
		t.Errorf("calls %v: the cluster was not torn down after the body failed", f.calls)
	}
}

// TestReuseAndKeep: Run leaves a cluster it found running (and Recreate
// destroys it first); Down destroys it; Keep never destroys.
func TestReuseAndKeep(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	body := func(ctx context.Context, _ *envconf.Config) (context.Context, error) { return ctx, nil }
	tests := map[string]struct {
		running, recreate, keep, down bool
		want                          []string
	}{
		"reused, left":              {running: true, want: []string{"create", "wait"}},
		"recreated, destroyed":      {running: true, recreate: true, want: []string{"destroy", "create", "wait", "destroy"}},
		"created, kept":             {keep: true, want: []string{"create", "wait"}},
		"recreated from a leftover": {recreate: true, want: []string{"destroy", "create", "wait", "destroy"}},
		"down destroys":             {running: true, down: true, want: []string{"destroy"}},
		"down keeps with keep":      {down: true, keep: true, want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFake(t)
			f.running = tc.running
			e, err := New(Config{Provider: f, Recreate: tc.recreate, Keep: tc.keep})
			if err != nil {
				t.Fatal(err)
			}
			if tc.down {
				err = e.Down(ctx, envconf.New())
			} else {
				err = e.Run(ctx, envconf.New(), body)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.calls, tc.want) {
				t.Errorf("calls %q, want %q", f.calls, tc.want)
			}
		})
	}
}

// TestUpStopsAtTheFirstError: Up returns the first failing step's error
// and runs no finish step.
func TestUpStopsAtTheFirstError(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFake(t, "n1")
	createErr := errors.New("port in use")
	f.fail["create"] = createErr
	e, err := New(fullConfig(f))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Up(ctx, envconf.New()); !errors.Is(err, createErr) {
		t.Errorf("Up error %v, want the create error", err)
	}
	if !slices.Equal(f.calls, []string{"create"}) {
		t.Errorf("calls %q, want only the create", f.calls)
	}
}

// TestMultiNodeDeployment: nodes with their own paths get every driver
// pinned to each, with that node's paths, and UUIDs seeded by their names;
// nodes that share paths get one deployment.
func TestMultiNodeDeployment(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFake(t, "n1", "n2")
	f.distinct = true
	e, err := New(Config{Provider: f, EmulatorProfile: "p", Drivers: []Driver{fakeDriver(f, "gpu")}, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Up(ctx, envconf.New()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"n2: drakit emulator render --profile p --root /emu/n2 --uuid-seed n2 --shim /shim.so",
		"deploy gpu root=/emu/n1 pin=n1", "deploy gpu root=/emu/n2 pin=n2",
	} {
		if !slices.Contains(f.calls, want) {
			t.Errorf("calls %q: no %q", f.calls, want)
		}
	}

	g := newFake(t, "n1", "n2")
	e, err = New(Config{Provider: g, Drivers: []Driver{fakeDriver(g, "gpu")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Up(ctx, envconf.New()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"create", "wait", "deploy gpu root=/var/lib/drakit/emulator pin="}; !slices.Equal(g.calls, want) {
		t.Errorf("shared paths: calls %q, want %q", g.calls, want)
	}
}

// TestClusterProfile: with a cluster profile each node renders the
// profile's node of its name (no UUID seed: the profile seeds its nodes),
// the watchers start, and a provider that renders itself gets the profile;
// a node profile and a cluster profile together are refused.
func TestClusterProfile(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFake(t, "n1", "n2")
	f.distinct = true
	e, err := New(Config{Provider: f, ClusterProfile: "conformance-fabric", Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Up(ctx, envconf.New()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"n1: drakit emulator render --cluster-profile conformance-fabric --node n1 --root /emu/n1 --shim /shim.so",
		"n2: drakit emulator render --cluster-profile conformance-fabric --node n2 --root /emu/n2 --shim /shim.so",
		"n2: drakit emulator watch --root /emu/n2 --detach --pid-file /emu/n2.watch.pid --log /var/log/drakit/emulator-watch.log",
	} {
		if !slices.Contains(f.calls, want) {
			t.Errorf("calls %q: no %q", f.calls, want)
		}
	}

	g := newFake(t, "n1")
	if e, err = New(Config{Provider: renderingProvider{g}, ClusterProfile: "conformance-fabric", Keep: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Up(ctx, envconf.New()); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(g.calls, "render n1 conformance-fabric") {
		t.Errorf("calls %q: the provider did not render the cluster profile's node", g.calls)
	}

	if _, err := New(Config{Provider: f, EmulatorProfile: "p", ClusterProfile: "c"}); err == nil ||
		!strings.Contains(err.Error(), "emulator profile p and cluster profile c") {
		t.Errorf("New with both profiles: %v, want a refusal naming both", err)
	}
}

// TestReuse: a reused environment only finds the running cluster (no
// render, watcher, image load or deployment) and at the end only exports
// the logs: the watchers and drivers an earlier setup started stay, and so
// does the cluster. Without a running cluster it fails before creating one.
func TestReuse(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFake(t, "n1")
	f.running = true
	cfg := fullConfig(f)
	cfg.Reuse = true
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = e.Run(ctx, envconf.New(), func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, f.call("body")
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"create", "wait", "body", "export-logs /art/logs"}; !slices.Equal(f.calls, want) {
		t.Errorf("calls %q, want %q", f.calls, want)
	}

	g := newFake(t, "n1")
	cfg = fullConfig(g)
	cfg.Reuse = true
	if e, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Up(ctx, envconf.New()); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Up without a running cluster: %v, want ErrNotRunning", err)
	}
	if len(g.calls) != 0 {
		t.Errorf("calls %q without a running cluster, want none", g.calls)
	}
	cfg.Recreate = true
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "reuse and recreate") {
		t.Errorf("New with reuse and recreate: %v, want a refusal", err)
	}
}

// TestNoNodeAccess: a provider without node access cannot render or
// deploy, and its finish has no watcher to stop.
func TestNoNodeAccess(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	x := NewExisting(kubeconfig(t), "", 0)
	if _, err := New(Config{Provider: x, EmulatorProfile: "dgx-a100-mig"}); err == nil || !strings.Contains(err.Error(), "no node access") {
		t.Errorf("New with a profile and no node access: %v, want a no-node-access error", err)
	}
	e, err := New(Config{Provider: x, ArtifactsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Down(ctx, envconf.New()); err != nil {
		t.Errorf("Down of an existing cluster: %v", err)
	}
}

// TestExistingCreateChecksTheAPIServer: Create fails, naming the server,
// when nothing answers.
func TestExistingCreateChecksTheAPIServer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	x := NewExisting(kubeconfig(t), "", 0)
	x.timeout = 2e9
	_, err := x.Create(ctx)
	if !errors.Is(err, ErrNotAnswering) || !strings.Contains(err.Error(), "https://127.0.0.1:1/readyz") {
		t.Errorf("Create against a closed port: %v, want ErrNotAnswering naming the server", err)
	}
}

// TestE2EFrameworkEnvironment: the steps are e2e-framework env.Funcs an
// env.Environment takes.
func TestE2EFrameworkEnvironment(t *testing.T) {
	f := newFake(t, "n1")
	e, err := New(fullConfig(f))
	if err != nil {
		t.Fatal(err)
	}
	testenv := env.NewWithConfig(envconf.New()).Setup(e.Setup()...).Finish(e.Finish()...)
	if testenv.EnvConf() == nil {
		t.Error("no env config")
	}
}

// TestNewProvider: the known providers, and an unknown name listed with
// them.
func TestNewProvider(t *testing.T) {
	for _, name := range []string{"local", "existing", "kind"} {
		if _, err := NewProvider(name, ProviderConfig{}); err != nil {
			t.Errorf("NewProvider(%q): %v", name, err)
		}
	}
	_, err := NewProvider("minikube", ProviderConfig{})
	if !errors.Is(err, ErrUnknownProvider) || !strings.Contains(err.Error(), "known: existing, kind, local") {
		t.Errorf("NewProvider(minikube): %v, want ErrUnknownProvider listing the known ones", err)
	}
}

// TestInterruptedRunCleansUp: a body interrupted (its context canceled)
// still gets the finish steps with a live context.
func TestInterruptedRunCleansUp(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	f := newFake(t, "n1")
	e, err := New(Config{Provider: f})
	if err != nil {
		t.Fatal(err)
	}
	err = e.Run(ctx, envconf.New(), func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		cancel()
		return ctx, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run error %v, want the body's cancellation", err)
	}
	if last := f.calls[len(f.calls)-1]; last != "destroy" {
		t.Errorf("last call %q, want a destroy with a live context", last)
	}
}

// renderingProvider renders the nodes itself.
type renderingProvider struct{ *fakeProvider }

func (r renderingProvider) SetDefaults() types.E2EClusterProvider    { return r }
func (r renderingProvider) WithName(string) types.E2EClusterProvider { return r }

func (r renderingProvider) RenderEmulator(_ context.Context, node string, hw Hardware) error {
	return r.call("render " + node + " " + hw.Profile + hw.ClusterProfile)
}

// TestProviderRenders: a provider that renders itself is asked to, once
// per node, instead of running drakit emulator render.
func TestProviderRenders(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFake(t, "n1", "n2")
	e, err := New(Config{Provider: renderingProvider{f}, EmulatorProfile: "p", Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Up(ctx, envconf.New()); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(f.calls, "render n1 p") || !slices.Contains(f.calls, "render n2 p") {
		t.Errorf("calls %q: the provider did not render each node", f.calls)
	}
	for _, c := range f.calls {
		if strings.Contains(c, "emulator render") {
			t.Errorf("ran %q although the provider renders", c)
		}
	}
}
