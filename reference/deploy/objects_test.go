package deploy

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// localClusterOptions are the paths drakit's local cluster uses.
func localClusterOptions() Options {
	o := DefaultOptions()
	run := "/home/dev/.local/state/drakit/cluster"
	o.KubeletRootDir = run + "/kubelet/root"
	o.CDIDir = run + "/cdi"
	o.DriverRoot = run + "/emulator"
	o.APIServerPort = 16443
	return o
}

func TestObjectsGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		opts   func() Options
	}{
		{"default.yaml", DefaultOptions},
		{"local-cluster.yaml", localClusterOptions},
		{"other-driver-no-apiserver.yaml", func() Options {
			o := DefaultOptions()
			o.DriverName = "gpu.example.com"
			o.Image = "registry.example.com/gpu-driver:v1"
			o.APIServerHost, o.APIServerPort = "", 0
			return o
		}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			m, err := Objects(tc.opts())
			if err != nil {
				t.Fatal(err)
			}
			var docs []string
			for _, obj := range m.List() {
				data, err := yaml.Marshal(obj)
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, string(data))
			}
			got := strings.Join(docs, "---\n")
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden file (run with -update to create it): %v", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("objects differ from %s (-want +got; run with -update if intended):\n%s", path, diff)
			}
		})
	}
}

// TestObjectsSamePathMounts checks the contract the driver relies on: every
// host path is mounted at the same path, and the flags name those paths.
func TestObjectsSamePathMounts(t *testing.T) {
	t.Parallel()
	opts := localClusterOptions()
	m, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	pod := m.DaemonSet.Spec.Template.Spec
	hostPaths := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath == nil {
			t.Errorf("volume %s is not a hostPath", v.Name)
			continue
		}
		hostPaths[v.Name] = v.HostPath.Path
	}
	mounts := map[string]string{}
	for _, vm := range pod.Containers[0].VolumeMounts {
		mounts[vm.Name] = vm.MountPath
		if hostPaths[vm.Name] != vm.MountPath {
			t.Errorf("volume %s: host path %s mounted at %s", vm.Name, hostPaths[vm.Name], vm.MountPath)
		}
	}
	wantMounts := map[string]string{
		"plugin-dir":    opts.KubeletRootDir + "/plugins/gpu.drakit.dev",
		"registrar-dir": opts.KubeletRootDir + "/plugins_registry",
		"cdi-dir":       opts.CDIDir,
		"driver-root":   opts.DriverRoot,
	}
	if diff := cmp.Diff(wantMounts, mounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	wantArgs := []string{
		"--driver-name=gpu.drakit.dev",
		"--driver-root=" + opts.DriverRoot,
		"--partitionable-alpha=false",
		"--cdi-dir=" + opts.CDIDir,
		"--kubelet-registrar-dir=" + opts.KubeletRootDir + "/plugins_registry",
		"--kubelet-plugin-dir=" + opts.KubeletRootDir + "/plugins/gpu.drakit.dev",
		"--v=4",
	}
	if diff := cmp.Diff(wantArgs, pod.Containers[0].Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	opts.PartitionableAlpha = true
	alpha, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	if args := alpha.DaemonSet.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--partitionable-alpha=true") {
		t.Errorf("PartitionableAlpha: args %v lack --partitionable-alpha=true", args)
	}
	env := map[string]string{}
	for _, e := range pod.Containers[0].Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		}
	}
	wantEnv := map[string]string{"NODE_NAME": "fieldRef:spec.nodeName", "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "16443"}
	if diff := cmp.Diff(wantEnv, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if !pod.HostNetwork || pod.Containers[0].SecurityContext == nil || !*pod.Containers[0].SecurityContext.Privileged ||
		pod.Containers[0].ImagePullPolicy != corev1.PullNever {
		t.Errorf("driver pod must be hostNetwork, privileged and never pull its image")
	}
}

func TestObjectsDoNotShareState(t *testing.T) {
	t.Parallel()
	a, err := Objects(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	a.DaemonSet.Spec.Template.Spec.Containers[0].Args[0] = "changed"
	b, err := Objects(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if b.DaemonSet.Spec.Template.Spec.Containers[0].Args[0] == "changed" {
		t.Error("Objects returned objects sharing state with an earlier call")
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{"defaults", func(*Options) {}, ""},
		{"no apiserver override", func(o *Options) { o.APIServerHost, o.APIServerPort = "", 0 }, ""},
		{"bad driver name", func(o *Options) { o.DriverName = "GPU" }, `DriverName "GPU"`},
		{"long driver name", func(o *Options) { o.DriverName = strings.Repeat("a", 64) }, "longer than 63"},
		{"no image", func(o *Options) { o.Image = "" }, "Image is required"},
		{"relative kubelet root", func(o *Options) { o.KubeletRootDir = "kubelet" }, `KubeletRootDir "kubelet" must be a clean absolute path`},
		{"unclean CDI dir", func(o *Options) { o.CDIDir = "/var/run/cdi/" }, `CDIDir "/var/run/cdi/" must be a clean absolute path`},
		{"driver root slash", func(o *Options) { o.DriverRoot = "/" }, "DriverRoot must not be /"},
		{"bad port", func(o *Options) { o.APIServerPort = 0 }, "APIServerPort 0 is not a port"},
		{"port without host", func(o *Options) { o.APIServerHost = "" }, "APIServerPort 6443 is set without APIServerHost"},
		{"no timeout", func(o *Options) { o.Timeout = 0 }, "Timeout 0s must be positive"},
		{"socket too long", func(o *Options) { o.KubeletRootDir = "/" + strings.Repeat("k", 80) }, "longer than 107 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := DefaultOptions()
			tc.mutate(&o)
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			case err != nil && !errors.Is(err, ErrInvalidOptions):
				t.Fatalf("error %v is not ErrInvalidOptions", err)
			}
			if _, objErr := Objects(o); (objErr == nil) != (err == nil) {
				t.Errorf("Objects error %v disagrees with Validate error %v", objErr, err)
			}
		})
	}
}

func TestDefaultOptionsTimeout(t *testing.T) {
	t.Parallel()
	if got := DefaultOptions().Timeout; got < 30*time.Second {
		t.Errorf("default timeout %s is shorter than a driver start on a loaded machine", got)
	}
}

// TestDefaultOptionsAreTheManifests: the manifests as written are what the
// default options render, so they can be applied by hand on a default node.
func TestDefaultOptionsAreTheManifests(t *testing.T) {
	t.Parallel()
	raw, err := decodeAll()
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := Objects(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(raw, rendered); diff != "" {
		t.Errorf("default options change the manifests (-as written +rendered):\n%s", diff)
	}
}
