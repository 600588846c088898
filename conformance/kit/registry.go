package kit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"drakit.dev/drakit/conformance/kubeletapi"
)

// The kubelet's plugin registry on the node, as the kit reads it: the
// registration sockets and what they answer.

// NodeSocketTimeout bounds each call the kit makes on a node socket.
const NodeSocketTimeout = 5 * time.Second

// pluginRegistry is the kubelet's plugin registry as the kit sees it, or
// why the kit cannot see it.
func (w *World) pluginRegistry() (string, string) {
	if w.Cfg.NodeKubeletRootDir == "" {
		return "", KubeletStateSkipReason
	}
	return filepath.Join(w.Cfg.NodeKubeletRootDir, kubeletapi.PluginRegistryDir), ""
}

// PluginRegistryReachable skips the scenario when the kit cannot see the
// kubelet's plugin registry.
func (w *World) PluginRegistryReachable(ctx context.Context) (context.Context, error) {
	dir, why := w.pluginRegistry()
	if why != "" {
		return Skip(ctx, why)
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return Skip(ctx, fmt.Sprintf("the kit cannot see the kubelet's plugin registry: %s does not exist (is --node-kubelet-root-dir the kubelet's --root-dir?)", dir))
	} else if err != nil {
		return ctx, fmt.Errorf("the kubelet's plugin registry below --node-kubelet-root-dir: %w", err)
	}
	return ctx, nil
}

// DriverRegistrations asks every registration socket of the kubelet's
// plugin registry GetInfo and returns those named after the driver that
// answered, with a description of every socket for messages.
func (w *World) DriverRegistrations(ctx context.Context) ([]kubeletapi.Registration, string, error) {
	dir, why := w.pluginRegistry()
	if why != "" {
		return nil, "", fmt.Errorf("%s", why)
	}
	all, err := kubeletapi.Registrations(ctx, dir, NodeSocketTimeout)
	if err != nil {
		return nil, "", err
	}
	var mine []kubeletapi.Registration
	var seen []string
	for _, r := range all {
		if r.Err != nil {
			seen = append(seen, fmt.Sprintf("%s: %v", r.Socket, r.Err))
			continue
		}
		seen = append(seen, fmt.Sprintf("%s: type %q name %q endpoint %q versions %q", r.Socket, r.Info.Type, r.Info.Name, r.Info.Endpoint, r.Info.SupportedVersions))
		if r.Info.Name == w.Driver.DriverName {
			mine = append(mine, r)
		}
	}
	desc := "no socket"
	if len(seen) > 0 {
		desc = strings.Join(seen, "; ")
	}
	return mine, desc, nil
}

// SomeDriverRegistrations are the driver's registrations, an error when
// there are none.
func (w *World) SomeDriverRegistrations(ctx context.Context) ([]kubeletapi.Registration, error) {
	mine, desc, err := w.DriverRegistrations(ctx)
	if err != nil {
		return nil, err
	}
	if len(mine) == 0 {
		return nil, fmt.Errorf("no registration socket answers GetInfo with the name %s: %s", w.Driver.DriverName, desc)
	}
	return mine, nil
}
