package nri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/render"
)

// Paths inside a container: where the shim finds its root ("/", derived
// from its own path) and the state below it.
const (
	containerLibrary  = "/" + render.LibraryDir + "/libnvidia-ml.so.1"
	containerStateDir = "/run/drakit-emulator"
)

// gpuMinorLimit is the first NVIDIA minor that is not a GPU: 254 is
// nvidia-modeset, 255 nvidiactl.
const gpuMinorLimit = 254

// Plugin adjusts the containers of one node whose emulator root is Root.
type Plugin struct {
	// Root is the node's emulator root (drakit emulator render --root).
	Root string
	// ReadyFile, when set, is written once containerd has registered the
	// plugin and handed it the node's pods, so that whoever started
	// containerd can tell that the plugin serves (containerd only warns
	// about a plugin that fails to start).
	ReadyFile string
}

// Synchronize is the NRI hook containerd calls once the plugin is
// registered: nothing to change in running containers; it marks the plugin
// ready.
func (p *Plugin) Synchronize(_ context.Context, _ []*api.PodSandbox, _ []*api.Container) ([]*api.ContainerUpdate, error) {
	if p.ReadyFile == "" {
		return nil, nil
	}
	if err := os.WriteFile(p.ReadyFile, []byte("ready\n"), 0o644); err != nil {
		return nil, fmt.Errorf("mark the emulator's NRI plugin ready: %w", err)
	}
	return nil, nil
}

// CreateContainer is the NRI hook: the adjustment that gives a container
// with an emulated GPU its NVML, or none.
func (p *Plugin) CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj, err := p.Adjust(ctr)
	if err != nil {
		// Failing the container would break a pod for a missing emulator
		// file; without the mounts its NVML fails visibly instead.
		klog.FromContext(ctx).Error(err, "Leaving the container without NVML", "pod", klog.KRef(pod.GetNamespace(), pod.GetName()), "container", ctr.GetName())
		return nil, nil, nil
	}
	if adj != nil {
		klog.FromContext(ctx).Info("Gave the container NVML", "pod", klog.KRef(pod.GetNamespace(), pod.GetName()), "container", ctr.GetName())
	}
	return adj, nil, nil
}

// Adjust returns the mounts ctr lacks for NVML, or nil when it has no
// emulated GPU, has both already, or the root holds no NVML state.
func (p *Plugin) Adjust(ctr *api.Container) (*api.ContainerAdjustment, error) {
	if !hasGPU(ctr) {
		return nil, nil
	}
	if _, err := os.Stat(filepath.Join(p.Root, nvmlstate.RelativePath)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("stat the NVML state below %s: %w", p.Root, err)
	}
	mounted := map[string]bool{}
	for _, m := range ctr.GetMounts() {
		mounted[path.Clean(m.GetDestination())] = true
	}
	adj := &api.ContainerAdjustment{}
	if !mounted[containerLibrary] {
		lib, err := filepath.EvalSymlinks(filepath.Join(p.Root, filepath.FromSlash(containerLibrary)))
		if err != nil {
			return nil, fmt.Errorf("resolve the NVML shim below %s: %w", p.Root, err)
		}
		adj.AddMount(bindMount(lib, containerLibrary))
	}
	if !mounted[containerStateDir] {
		adj.AddMount(bindMount(filepath.Join(p.Root, filepath.Dir(nvmlstate.RelativePath)), containerStateDir))
	}
	if len(adj.GetMounts()) == 0 {
		return nil, nil
	}
	return adj, nil
}

// hasGPU reports whether ctr is given a character device of an emulated GPU.
func hasGPU(ctr *api.Container) bool {
	for _, d := range ctr.GetLinux().GetDevices() {
		if d.GetType() == "c" && d.GetMajor() == render.NvidiaMajor && d.GetMinor() >= 0 && d.GetMinor() < gpuMinorLimit {
			return true
		}
	}
	return false
}

// bindMount is a read-only bind mount: the state directory, not the file,
// because the renderer replaces the file by renaming a new one over it.
func bindMount(source, destination string) *api.Mount {
	return &api.Mount{
		Source:      source,
		Destination: destination,
		Type:        "bind",
		Options:     []string{"rbind", "ro", "nosuid", "nodev"},
	}
}

// Run serves the plugin on the connection containerd hands a plugin it
// launches (NRI_PLUGIN_SOCKET and friends in the environment) until
// containerd closes it.
func Run(ctx context.Context, p *Plugin) error {
	if p.Root == "" || !filepath.IsAbs(p.Root) {
		return fmt.Errorf("run the emulator's NRI plugin: the emulator root %q is not an absolute path", p.Root)
	}
	s, err := stub.New(p)
	if err != nil {
		return fmt.Errorf("create the emulator's NRI plugin: %w", err)
	}
	if err := s.Run(ctx); err != nil {
		return fmt.Errorf("run the emulator's NRI plugin: %w", err)
	}
	return nil
}
