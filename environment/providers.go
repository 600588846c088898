package environment

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/types"

	"drakit.dev/drakit/cluster"
	"drakit.dev/drakit/environment/kind"
)

// ErrUnknownProvider: NewProvider was given a name not in ProviderNames.
var ErrUnknownProvider = errors.New("unknown cluster provider")

// ProviderConfig has what the providers are made from; each uses its own
// fields.
type ProviderConfig struct {
	// Kubeconfig is the existing cluster's.
	Kubeconfig string
	// KubeContext is the existing cluster's context in Kubeconfig (empty:
	// its current-context).
	KubeContext string
	// RequestTimeout bounds each request of the existing provider's
	// client (0: no bound).
	RequestTimeout time.Duration
	// Local is the local cluster's configuration.
	Local cluster.Config
	// Kind is the kind cluster's additions to its configuration (node
	// image, workers, state dir, offline).
	Kind kind.ConfigOptions
	// Drakit is the drakit binary the local provider runs on its nodes and
	// the kind provider installs in them.
	Drakit string
	// Shim is the built NVML shim the nodes render with.
	Shim string
}

// providers are the cluster providers by name; a new provider is one
// entry here.
var providers = map[string]func(ProviderConfig) types.E2EClusterProvider{
	"local": func(c ProviderConfig) types.E2EClusterProvider { return NewLocal(c.Local, c.Drakit, c.Shim) },
	"existing": func(c ProviderConfig) types.E2EClusterProvider {
		return NewExisting(c.Kubeconfig, c.KubeContext, c.RequestTimeout)
	},
	"kind": func(c ProviderConfig) types.E2EClusterProvider { return NewKind(c.Kind, c.Drakit, c.Shim) },
}

// ProviderNames returns the providers' names, sorted.
func ProviderNames() []string {
	names := make([]string, 0, len(providers))
	for n := range providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewProvider returns the named provider made from cfg.
func NewProvider(name string, cfg ProviderConfig) (types.E2EClusterProvider, error) {
	p, ok := providers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownProvider, name, strings.Join(ProviderNames(), ", "))
	}
	return p(cfg), nil
}
