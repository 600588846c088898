package environment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/types"
)

// ErrNotAnswering: the existing cluster's API server did not answer.
var ErrNotAnswering = errors.New("the API server does not answer")

// Existing is the provider of a cluster someone else runs, given by its
// kubeconfig: it never creates, changes or destroys it, and has no node
// access.
type Existing struct {
	kubeconfig string
	// kubeContext is the kubeconfig's context (empty: its current-context).
	kubeContext string
	// requestTimeout bounds each request (0: no bound).
	requestTimeout time.Duration
	// timeout bounds Create's check.
	timeout time.Duration
}

// NewExisting returns the provider of the cluster of the kubeconfig
// (empty: $KUBECONFIG or ~/.kube/config) and its context (empty: the
// current-context), as kubectl's --kubeconfig and --context; its client's
// requests are bounded by requestTimeout (0: no bound), as with kubectl's
// --request-timeout.
func NewExisting(kubeconfig, kubeContext string, requestTimeout time.Duration) *Existing {
	return &Existing{kubeconfig: kubeconfig, kubeContext: kubeContext, requestTimeout: requestTimeout, timeout: 30 * time.Second}
}

var (
	_ types.E2EClusterProvider = (*Existing)(nil)
	_ Runner                   = (*Existing)(nil)
)

// WithName does nothing: the cluster is the kubeconfig's.
func (x *Existing) WithName(string) types.E2EClusterProvider { return x }

// WithVersion does nothing: the cluster runs what it runs.
func (x *Existing) WithVersion(string) types.E2EClusterProvider { return x }

// WithPath sets the kubeconfig.
func (x *Existing) WithPath(path string) types.E2EClusterProvider {
	x.kubeconfig = path
	return x
}

// WithOpts applies opts to the provider.
func (x *Existing) WithOpts(opts ...types.ClusterOpts) types.E2EClusterProvider {
	for _, o := range opts {
		o(x)
	}
	return x
}

// SetDefaults does nothing.
func (x *Existing) SetDefaults() types.E2EClusterProvider { return x }

// Running is always true: the cluster is reused, never torn down by Run.
func (x *Existing) Running(context.Context) (bool, error) { return true, nil }

// clientConfig is the kubeconfig with the context.
func (x *Existing) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = x.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: x.kubeContext})
}

// restConfig loads the kubeconfig.
func (x *Existing) restConfig() (*rest.Config, error) {
	rc, err := x.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	rc.Timeout = x.requestTimeout
	return rc, nil
}

// Create only checks that the cluster's API server answers (/readyz) and
// returns the kubeconfig.
func (x *Existing) Create(ctx context.Context, _ ...string) (string, error) {
	rc, err := x.restConfig()
	if err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", rc.Host, err)
	}
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return "", fmt.Errorf("%w: %s/readyz: %v", ErrNotAnswering, rc.Host, err)
	}
	return x.GetKubeconfig(), nil
}

// CreateWithConfig is Create: there is nothing to configure.
func (x *Existing) CreateWithConfig(ctx context.Context, _ string) (string, error) {
	return x.Create(ctx)
}

// GetKubeconfig returns the kubeconfig (empty: the default loading rules').
func (x *Existing) GetKubeconfig() string { return x.kubeconfig }

// GenerateKubeconfig returns the kubeconfig.
func (x *Existing) GenerateKubeconfig(...string) (string, error) { return x.kubeconfig, nil }

// GetKubectlContext returns the context: the one given, else the
// kubeconfig's current-context.
func (x *Existing) GetKubectlContext() string {
	if x.kubeContext != "" {
		return x.kubeContext
	}
	raw, err := x.clientConfig().RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}

// WaitForControlPlane returns at once: Create checked the API server.
func (x *Existing) WaitForControlPlane(context.Context, klient.Client) error { return nil }

// KubernetesRestConfig returns the kubeconfig's rest config (nil when it
// cannot be read).
func (x *Existing) KubernetesRestConfig() *rest.Config {
	rc, err := x.restConfig()
	if err != nil {
		return nil
	}
	return rc
}

// ExportLogs does nothing: the cluster's logs are its owner's.
func (x *Existing) ExportLogs(context.Context, string) error { return nil }

// Destroy does nothing: the cluster is never torn down.
func (x *Existing) Destroy(context.Context) error { return nil }
