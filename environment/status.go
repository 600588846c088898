package environment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// State is what Status finds of the provider's cluster.
type State struct {
	// Running is true when the cluster runs: the local cluster is up, kind
	// runs a cluster of the name, the existing cluster's API server
	// answers.
	Running bool `json:"running"`
	// Detail says why the cluster does not run, where the provider knows.
	Detail string `json:"detail,omitempty"`
	// Kubeconfig is the cluster's kubeconfig (empty: none written, or, for
	// the existing provider, the default loading rules').
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Nodes are the running cluster's nodes with their paths (none for a
	// provider without node access).
	Nodes []Node `json:"nodes,omitempty"`
}

// Status tells whether the provider's cluster runs and, when it does, its
// kubeconfig and nodes; it creates, changes and deletes nothing. The
// existing provider's cluster runs when its API server answers (Create's
// check); another provider must tell it (Runner).
func (e *Environment) Status(ctx context.Context) (State, error) {
	p := e.cfg.Provider
	switch p := p.(type) {
	case *Existing:
		kubeconfig, err := p.Create(ctx)
		if errors.Is(err, ErrNotAnswering) {
			return State{Kubeconfig: p.GetKubeconfig(), Detail: err.Error()}, nil
		}
		if err != nil {
			return State{}, fmt.Errorf("status of cluster %s: %w", e.cfg.ClusterName, err)
		}
		return State{Running: true, Kubeconfig: kubeconfig}, nil
	case Runner:
		running, err := p.Running(ctx)
		if err != nil {
			return State{}, fmt.Errorf("status of cluster %s: %w", e.cfg.ClusterName, err)
		}
		st := State{Running: running, Kubeconfig: e.cfg.Provider.GetKubeconfig()}
		if k, ok := p.(*Kind); ok {
			st.Kubeconfig = k.kubeconfigFile()
		}
		if !running {
			st.Detail = "no such cluster runs"
			return st, nil
		}
		if st.Nodes, err = e.Nodes(ctx); err != nil {
			return st, fmt.Errorf("status of cluster %s: %w", e.cfg.ClusterName, err)
		}
		return st, nil
	}
	return State{}, fmt.Errorf("status of cluster %s: the cluster provider %T cannot tell whether its cluster runs", e.cfg.ClusterName, p)
}

// kubeconfigFile is the kubeconfig that Create wrote into the state
// directory (empty: none there).
func (k *Kind) kubeconfigFile() string {
	if k.opts.StateDir == "" {
		return ""
	}
	path := filepath.Join(k.opts.StateDir, "kubeconfig")
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}
