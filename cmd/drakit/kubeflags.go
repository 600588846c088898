package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeFlags are the usual Kubernetes client flags of every drakit
// subcommand that talks to a cluster: --kubeconfig (default
// $DRAKIT_KUBECONFIG, as drakit cluster status -o env prints it; empty:
// $KUBECONFIG, then ~/.kube/config), --context and --request-timeout,
// resolved by client-go's clientcmd as kubectl resolves them.
type kubeFlags struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
}

// kubeconfigUsage is --kubeconfig's usage.
const kubeconfigUsage = "kubeconfig of the cluster ($DRAKIT_KUBECONFIG; empty: $KUBECONFIG or ~/.kube/config)"

// bindKubeFlags adds the client flags to fs.
func bindKubeFlags(fs *pflag.FlagSet) *kubeFlags {
	k := &kubeFlags{kubeconfig: os.Getenv("DRAKIT_KUBECONFIG")}
	fs.StringVar(&k.kubeconfig, "kubeconfig", k.kubeconfig, kubeconfigUsage)
	fs.StringVar(&k.overrides.CurrentContext, "context", "", "kubeconfig context to use (default: the kubeconfig's current-context)")
	fs.StringVar(&k.overrides.Timeout, "request-timeout", "0",
		"how long a single request to the API server may take, a duration (1s, 2m) or 0 for no limit")
	return k
}

// completeContexts completes --context with the kubeconfig's contexts.
func (k *kubeFlags) completeContexts(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
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
func (k *kubeFlags) register(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("context", k.completeContexts) // the flag is bound: no error
}

func (k *kubeFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &k.overrides)
}

// restConfig is the client configuration the flags name.
func (k *kubeFlags) restConfig() (*rest.Config, error) {
	rc, err := k.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q: %w", k.kubeconfig, err)
	}
	return rc, nil
}

// client is a client of the cluster the flags name.
func (k *kubeFlags) client() (kubernetes.Interface, error) {
	rc, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("create Kubernetes client: %w", err)
	}
	return cs, nil
}
