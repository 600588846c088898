package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrUnknownComponent is returned for a component name not in Components().
var ErrUnknownComponent = errors.New("unknown component")

// State is the state of a cluster and the paths other tools need.
type State struct {
	// Up is true when every component runs and is healthy and the Node is
	// Ready without the not-ready taint.
	Up        bool   `json:"up"`
	NodeName  string `json:"nodeName"`
	NodeState string `json:"nodeState"`

	RunDir         string `json:"runDir"`
	Kubeconfig     string `json:"kubeconfig"`
	APIServer      string `json:"apiServer"`
	CDIDir         string `json:"cdiDir"`
	KubeletRootDir string `json:"kubeletRootDir"`
	EmulatorRoot   string `json:"emulatorRoot"`
	// ImagesDir is the images dir Up imported from (its record in the run
	// dir), else the configured one; Images are the archives Up imported.
	ImagesDir        string   `json:"imagesDir"`
	Images           []string `json:"images,omitempty"`
	ContainerdSocket string   `json:"containerdSocket"`
	Kubectl          string   `json:"kubectl"`

	Components []ComponentState `json:"components"`
}

// ComponentState is the state of one component.
type ComponentState struct {
	Name     string `json:"name"`
	PID      int    `json:"pid,omitempty"`
	Running  bool   `json:"running"`
	Healthy  bool   `json:"healthy"`
	RSSBytes int64  `json:"rssBytes,omitempty"`
	Log      string `json:"log"`
	// Detail says why a running component is not healthy.
	Detail string `json:"detail,omitempty"`
}

// Status reports each component (by PID file and readiness endpoint) and
// the Node. It starts and changes nothing, and needs no root.
func Status(ctx context.Context, cfg Config) (State, error) {
	if err := cfg.Validate(); err != nil {
		return State{}, err
	}
	kubectl, _ := BinaryPath(cfg, "kubectl")
	st := State{
		NodeName: cfg.NodeName, NodeState: string(nodeAbsent),
		RunDir: cfg.RunDir, Kubeconfig: KubeconfigPath(cfg), APIServer: APIServerURL(cfg),
		CDIDir: CDIDir(cfg), KubeletRootDir: KubeletRootDir(cfg), EmulatorRoot: EmulatorRoot(cfg),
		ImagesDir: cfg.ImagesDir, ContainerdSocket: ContainerdSocket(cfg), Kubectl: kubectl,
	}
	if rec, ok := readImportedImages(cfg); ok {
		st.ImagesDir, st.Images = rec.Dir, rec.Archives
	}
	checks := probes(cfg)
	allHealthy, apiHealthy := true, false
	for _, name := range Components() {
		cs := ComponentState{Name: name, Log: LogPath(cfg, name)}
		p, err := runningProcess(cfg, name)
		switch {
		case err != nil:
			cs.Detail = err.Error()
		case p != nil:
			cs.PID, cs.Running = p.ref.PID, true
			cs.RSSBytes, _ = rssBytes(p.ref.PID)
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			if err := checks[name](pctx); err != nil {
				cs.Detail = err.Error()
			} else {
				cs.Healthy = true
			}
			cancel()
		}
		allHealthy = allHealthy && cs.Healthy
		apiHealthy = apiHealthy || (name == APIServer && cs.Healthy)
		st.Components = append(st.Components, cs)
	}
	if apiHealthy {
		if client, err := Client(cfg); err == nil {
			state, _ := nodeState(ctx, client, cfg.NodeName)
			st.NodeState = string(state)
		}
	}
	st.Up = allHealthy && st.NodeState == string(nodeSchedulable)
	return st, nil
}

// Logs returns the last tail lines of a component's log (tail <= 0: all).
func Logs(cfg Config, component string, tail int) (string, error) {
	if !slices.Contains(Components(), component) {
		return "", fmt.Errorf("%w %q (components: %v)", ErrUnknownComponent, component, Components())
	}
	s, err := tailFile(LogPath(cfg, component), tail)
	if isNotExist(err) {
		return "", fmt.Errorf("read log of %s: no log at %s (the cluster never started it)", component, LogPath(cfg, component))
	}
	if err != nil {
		return "", fmt.Errorf("read log of %s: %w", component, err)
	}
	return s, nil
}
