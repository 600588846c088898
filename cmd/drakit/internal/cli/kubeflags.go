package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeFlags are the usual Kubernetes client flags of every drakit
// subcommand that talks to a cluster: --kubeconfig (default
// $DRAKIT_KUBECONFIG, as drakit env status -o env prints it; empty:
// $KUBECONFIG, then ~/.kube/config), --context and --request-timeout,
// resolved by client-go's clientcmd as kubectl resolves them. They are
// bound to fields of their own (BindKubeFlags) or of the command's
// configuration (BindKubeFlagsTo).
type KubeFlags struct {
	kubeconfig     *string
	context        *string
	requestTimeout *time.Duration
}

// KubeconfigUsage is --kubeconfig's usage.
const KubeconfigUsage = "kubeconfig of the cluster ($DRAKIT_KUBECONFIG; empty: $KUBECONFIG or ~/.kube/config)"

// BindKubeFlags adds the client flags to fs.
func BindKubeFlags(fs *pflag.FlagSet) *KubeFlags {
	kubeconfig, context, requestTimeout := os.Getenv("DRAKIT_KUBECONFIG"), "", time.Duration(0)
	return BindKubeFlagsTo(fs, &kubeconfig, &context, &requestTimeout, KubeconfigUsage)
}

// BindKubeFlagsTo adds the client flags to fs, bound to the caller's
// fields, whose values are the defaults; usage is --kubeconfig's.
func BindKubeFlagsTo(fs *pflag.FlagSet, kubeconfig, context *string, requestTimeout *time.Duration, usage string) *KubeFlags {
	fs.StringVar(kubeconfig, "kubeconfig", *kubeconfig, usage)
	fs.StringVar(context, "context", *context, "kubeconfig context to use (default: the kubeconfig's current-context)")
	fs.Var((*timeoutValue)(requestTimeout), "request-timeout",
		"how long a single request to the API server may take, a duration (1s, 2m) or whole seconds; 0: no limit")
	return &KubeFlags{kubeconfig: kubeconfig, context: context, requestTimeout: requestTimeout}
}

// timeoutValue is --request-timeout's value: kubectl's syntax
// (clientcmd.ParseTimeout), never negative.
type timeoutValue time.Duration

// String is the value as a duration.
func (v *timeoutValue) String() string { return time.Duration(*v).String() }

// Type names the value in the usage.
func (v *timeoutValue) Type() string { return "duration" }

// Set parses s.
func (v *timeoutValue) Set(s string) error {
	d, err := clientcmd.ParseTimeout(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("%s is negative (0: no limit)", s)
	}
	*v = timeoutValue(d)
	return nil
}

// Kubeconfig is --kubeconfig's value.
func (k *KubeFlags) Kubeconfig() string { return *k.kubeconfig }

// Context is --context's value.
func (k *KubeFlags) Context() string { return *k.context }

// RequestTimeout is --request-timeout's value.
func (k *KubeFlags) RequestTimeout() time.Duration { return *k.requestTimeout }

// completeContexts completes --context with the kubeconfig's contexts.
func (k *KubeFlags) completeContexts(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	raw, err := k.clientConfig().RawConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for name := range raw.Contexts {
		names = append(names, name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// register adds the completion of --context to cmd, whose flags (or
// persistent flags) hold k's.
func (k *KubeFlags) Register(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("context", k.completeContexts) // the flag is bound: no error
}

func (k *KubeFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *k.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: *k.context})
}

// restConfig is the client configuration the flags name.
func (k *KubeFlags) RestConfig() (*rest.Config, error) {
	rc, err := k.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q: %w", *k.kubeconfig, err)
	}
	rc.Timeout = *k.requestTimeout
	return rc, nil
}

// client is a client of the cluster the flags name.
func (k *KubeFlags) Client() (kubernetes.Interface, error) {
	rc, err := k.RestConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("create Kubernetes client: %w", err)
	}
	return cs, nil
}

// ValidatedClient runs validate, so that bad flags are reported before the
// kubeconfig is read, and returns a client of the cluster the flags name.
func (k *KubeFlags) ValidatedClient(validate func() error) (kubernetes.Interface, error) {
	if err := validate(); err != nil {
		return nil, err
	}
	return k.Client()
}

// ClientFlagsOnlyWithExisting refuses --context and --request-timeout of
// fs with a provider other than existing: that provider writes the
// cluster's kubeconfig, which is used as written.
func ClientFlagsOnlyWithExisting(fs *pflag.FlagSet, provider string) error {
	if provider == "existing" {
		return nil
	}
	for _, f := range []string{"context", "request-timeout"} {
		if fs.Changed(f) {
			return fmt.Errorf("--%s: not with --provider %s (the provider writes the cluster's kubeconfig, which is used as written)", f, provider)
		}
	}
	return nil
}
