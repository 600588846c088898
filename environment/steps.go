package environment

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/types"
)

// Runner is implemented by providers that can tell whether their cluster
// runs; setup reuses a running one, and Run then leaves it running. A
// provider without it is taken to create a new cluster every time.
type Runner interface {
	Running(ctx context.Context) (bool, error)
}

// ErrNotRunning is returned when Reuse finds no running cluster.
var ErrNotRunning = errors.New("no such cluster runs (set it up first: drakit env up)")

// CreateCluster creates the provider's cluster or reuses a running one
// (Recreate: destroys it first; Reuse: fails with ErrNotRunning when none runs), points ecfg at its kubeconfig, waits for
// its control plane and stores the provider in the context.
func (e *Environment) CreateCluster() env.Func {
	return func(ctx context.Context, ecfg *envconf.Config) (context.Context, error) {
		logger := klog.FromContext(ctx)
		p := e.cfg.Provider
		running := false
		if e.cfg.Recreate {
			// Whatever is left of a cluster, up or not, goes.
			logger.Info("Destroying what is left of the cluster before creating it", "cluster", e.cfg.ClusterName)
			if err := p.Destroy(ctx); err != nil {
				return ctx, fmt.Errorf("recreate cluster %s: %w", e.cfg.ClusterName, err)
			}
		} else if r, ok := p.(Runner); ok {
			var err error
			if running, err = r.Running(ctx); err != nil {
				return ctx, fmt.Errorf("create cluster %s: %w", e.cfg.ClusterName, err)
			}
		}
		if e.cfg.Reuse && !running {
			return ctx, fmt.Errorf("reuse cluster %s: %w", e.cfg.ClusterName, ErrNotRunning)
		}
		var kubeconfig string
		var err error
		if e.cfg.ClusterConfig != "" {
			kubeconfig, err = p.CreateWithConfig(ctx, e.cfg.ClusterConfig)
		} else {
			kubeconfig, err = p.Create(ctx)
		}
		// A failed create may have started part of the cluster: the
		// teardown is Run's to do.
		e.created = !running
		if err != nil {
			return ctx, fmt.Errorf("create cluster %s: %w", e.cfg.ClusterName, err)
		}
		ecfg.WithKubeconfigFile(kubeconfig)
		client, err := providerClient(p, ecfg)
		if err != nil {
			return ctx, fmt.Errorf("create cluster %s: %w", e.cfg.ClusterName, err)
		}
		if err := p.WaitForControlPlane(ctx, client); err != nil {
			return ctx, fmt.Errorf("wait for the control plane of cluster %s: %w", e.cfg.ClusterName, err)
		}
		if running {
			logger.V(1).Info("Reusing the running cluster", "cluster", e.cfg.ClusterName, "kubeconfig", kubeconfig)
		} else {
			logger.Info("Cluster created", "cluster", e.cfg.ClusterName, "kubeconfig", kubeconfig)
		}
		return context.WithValue(ctx, types.ClusterNameContextKey(e.cfg.ClusterName), p), nil
	}
}

// providerClient is a client of p's cluster: from p's REST config, which
// has what the kubeconfig file alone may lack (the existing cluster's
// context), else from ecfg's kubeconfig.
func providerClient(p types.E2EClusterProvider, ecfg *envconf.Config) (klient.Client, error) {
	if rc := p.KubernetesRestConfig(); rc != nil {
		c, err := klient.New(rc)
		if err != nil {
			return nil, fmt.Errorf("create client for %s: %w", rc.Host, err)
		}
		return c, nil
	}
	return ecfg.NewClient()
}

// nodes returns every node with its layout; ok is false for a provider
// without node access.
func (e *Environment) nodes(ctx context.Context) (NodeAccess, []Node, bool, error) {
	na, ok := e.cfg.Provider.(NodeAccess)
	if !ok {
		return nil, nil, false, nil
	}
	names, err := na.NodeNames(ctx)
	if err != nil {
		return nil, nil, true, fmt.Errorf("list the nodes of cluster %s: %w", e.cfg.ClusterName, err)
	}
	nodes := make([]Node, 0, len(names))
	layout, hasLayout := e.cfg.Provider.(NodeLayout)
	for _, name := range names {
		n := DefaultNode(name)
		if hasLayout {
			if n, err = layout.Node(ctx, name); err != nil {
				return nil, nil, true, fmt.Errorf("find the paths of node %s: %w", name, err)
			}
		}
		nodes = append(nodes, n)
	}
	return na, nodes, true, nil
}

// EmulatorRenderer is implemented by providers that render a node's
// emulated hardware themselves (installing drakit and the NVML shim in the
// node first, as the kind provider does); the render step then calls it
// instead of running drakit emulator render through RunOnNode.
type EmulatorRenderer interface {
	RenderEmulator(ctx context.Context, node string, hw Hardware) error
}

// RenderEmulator renders EmulatorProfile, or each node's node of
// ClusterProfile, on every node (nothing without either).
func (e *Environment) RenderEmulator() env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		hw := e.cfg.hardware()
		if !hw.rendered() {
			return ctx, nil
		}
		na, nodes, _, err := e.nodes(ctx)
		if err != nil {
			return ctx, err
		}
		renderer, renders := e.cfg.Provider.(EmulatorRenderer)
		for _, n := range nodes {
			klog.FromContext(ctx).Info("Rendering the emulated node", "node", n.Name, "hardware", hw.String(), "root", n.EmulatorRoot)
			if renders {
				err = renderer.RenderEmulator(ctx, n.Name, hw)
			} else {
				err = na.RunOnNode(ctx, n.Name, renderArgv(hw, n, len(nodes)))
			}
			if err != nil {
				return ctx, fmt.Errorf("render %s on node %s: %w", hw, n.Name, err)
			}
		}
		return ctx, nil
	}
}

// renderArgv is the drakit emulator render command line that renders hw
// on node n of a cluster of nodes nodes.
func renderArgv(hw Hardware, n Node, nodes int) []string {
	argv := []string{"drakit", "emulator", "render"}
	if hw.ClusterProfile != "" {
		argv = append(argv, "--cluster-profile", hw.ClusterProfile, "--node", n.Name, "--root", n.EmulatorRoot)
	} else {
		argv = append(argv, "--profile", hw.Profile, "--root", n.EmulatorRoot)
		if nodes > 1 {
			// No two nodes may have the same GPU UUIDs.
			argv = append(argv, "--uuid-seed", n.Name)
		}
	}
	if n.ShimLibrary != "" {
		argv = append(argv, "--shim", n.ShimLibrary)
	}
	return argv
}

// StartWatchers starts the emulator's sriov_numvfs watcher on every node
// (nothing without rendered hardware): a driver creates VFs by writing
// sriov_numvfs, as on a real kernel, and the watcher applies the writes.
func (e *Environment) StartWatchers() env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		if !e.cfg.hardware().rendered() {
			return ctx, nil
		}
		na, nodes, _, err := e.nodes(ctx)
		if err != nil {
			return ctx, err
		}
		for _, n := range nodes {
			argv := []string{"drakit", "emulator", "watch", "--root", n.EmulatorRoot, "--detach",
				"--pid-file", n.watcherPIDFile(), "--log", n.watcherLog()}
			if err := na.RunOnNode(ctx, n.Name, argv); err != nil {
				return ctx, fmt.Errorf("start the sriov_numvfs watcher on node %s: %w", n.Name, err)
			}
		}
		return ctx, nil
	}
}

// StopWatchers stops every node's watcher that StartWatchers started (by
// the PID in its PID file; nothing where none runs).
func (e *Environment) StopWatchers() env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		na, nodes, ok, err := e.nodes(ctx)
		if !ok || err != nil {
			return ctx, err
		}
		var errs []error
		for _, n := range nodes {
			argv := []string{"drakit", "emulator", "watch", "--root", n.EmulatorRoot, "--stop", "--pid-file", n.watcherPIDFile()}
			if err := na.RunOnNode(ctx, n.Name, argv); err != nil {
				errs = append(errs, fmt.Errorf("stop the sriov_numvfs watcher on node %s: %w", n.Name, err))
			}
		}
		return ctx, errors.Join(errs...)
	}
}

// LoadImages loads every ImageArchives archive into the cluster.
func (e *Environment) LoadImages() env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		if len(e.cfg.ImageArchives) == 0 {
			return ctx, nil
		}
		loader, ok := e.cfg.Provider.(types.E2EClusterProviderWithImageLoader)
		if !ok {
			return ctx, fmt.Errorf("load images: the cluster provider %T cannot load images", e.cfg.Provider)
		}
		for _, a := range e.cfg.ImageArchives {
			if err := loader.LoadImageArchive(ctx, a); err != nil {
				return ctx, fmt.Errorf("load image archive %s: %w", a, err)
			}
		}
		return ctx, nil
	}
}

// DeployDrivers deploys Drivers in order with the nodes' paths: one
// deployment for every node where all nodes have the same paths, else one
// pinned to each node.
func (e *Environment) DeployDrivers() env.Func {
	return func(ctx context.Context, ecfg *envconf.Config) (context.Context, error) {
		if len(e.cfg.Drivers) == 0 {
			return ctx, nil
		}
		_, nodes, _, err := e.nodes(ctx)
		if err != nil {
			return ctx, err
		}
		if len(nodes) == 0 {
			return ctx, errors.New("deploy drivers: the cluster has no nodes")
		}
		client, err := clientset(ecfg.KubeconfigFile())
		if err != nil {
			return ctx, fmt.Errorf("deploy drivers: %w", err)
		}
		targets := []Node{nodes[0]}
		pin := false
		for _, n := range nodes[1:] {
			if !samePaths(n, nodes[0]) {
				targets, pin = nodes, true
				break
			}
		}
		for _, d := range e.cfg.Drivers {
			for _, n := range targets {
				node := ""
				if pin {
					node = n.Name
				}
				klog.FromContext(ctx).Info("Deploying driver", "driver", d.Name, "node", node)
				began := time.Now()
				if err := d.Apply(ctx, client, n, node); err != nil {
					return ctx, fmt.Errorf("deploy driver %s: %w", d.Name, err)
				}
				klog.FromContext(ctx).Info("Driver ready", "driver", d.Name, "node", node, "took", time.Since(began).Round(time.Millisecond))
			}
		}
		return ctx, nil
	}
}

// samePaths reports whether two nodes keep everything at the same paths.
func samePaths(a, b Node) bool {
	a.Name, b.Name = "", ""
	return a == b
}

// clientset returns a client of the kubeconfig's cluster.
func clientset(kubeconfig string) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	return kubernetes.NewForConfig(rc)
}

// ExportLogs exports the cluster's logs to <ArtifactsDir>/logs (nothing
// without ArtifactsDir).
func (e *Environment) ExportLogs() env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		if e.cfg.ArtifactsDir == "" {
			return ctx, nil
		}
		dest := filepath.Join(e.cfg.ArtifactsDir, "logs")
		if err := e.cfg.Provider.ExportLogs(ctx, dest); err != nil {
			return ctx, fmt.Errorf("export the logs of cluster %s to %s: %w", e.cfg.ClusterName, dest, err)
		}
		return ctx, nil
	}
}

// DestroyCluster tears the cluster down, unless Keep; Run's teardown
// leaves a cluster that setup found running.
func (e *Environment) DestroyCluster() env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		logger := klog.FromContext(ctx)
		switch {
		case e.cfg.Keep:
			logger.Info("Keeping the cluster", "cluster", e.cfg.ClusterName)
			return ctx, nil
		case !e.created && !e.destroyAlways:
			logger.V(1).Info("Leaving the cluster this run found running", "cluster", e.cfg.ClusterName)
			return ctx, nil
		}
		logger.Info("Tearing the cluster down", "cluster", e.cfg.ClusterName)
		if err := e.cfg.Provider.Destroy(ctx); err != nil {
			return ctx, fmt.Errorf("destroy cluster %s: %w", e.cfg.ClusterName, err)
		}
		return ctx, nil
	}
}

// Nodes returns every node of the cluster with its paths (none for a
// provider without node access).
func (e *Environment) Nodes(ctx context.Context) ([]Node, error) {
	_, nodes, _, err := e.nodes(ctx)
	return nodes, err
}
