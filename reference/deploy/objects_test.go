package deploy

import (
	"flag"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// localClusterOptions are the paths drakit's local cluster uses.
func localClusterOptions() Options {
	o := DefaultOptions(KindGPU)
	run := "/home/dev/.local/state/drakit/cluster"
	o.KubeletRootDir = run + "/kubelet/root"
	o.CDIDir = run + "/cdi"
	o.HostRoot = run + "/emulator"
	o.APIServerPort = 16443
	return o
}

func TestObjectsGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		opts   func() Options
	}{
		{"default.yaml", func() Options { return DefaultOptions(KindGPU) }},
		{"local-cluster.yaml", localClusterOptions},
		{"other-driver-no-apiserver.yaml", func() Options {
			o := DefaultOptions(KindGPU)
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
			checkGolden(t, m.List(), tc.golden)
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
		"plugin-dir":               opts.KubeletRootDir + "/plugins/gpu.drakit.dev",
		"registrar-dir":            opts.KubeletRootDir + "/plugins_registry",
		"cdi-dir":                  opts.CDIDir,
		"driver-root":              opts.HostRoot,
		"driver-root-state":        opts.HostRoot + "/run/drakit-emulator",
		"driver-root-caps":         opts.HostRoot + "/dev/nvidia-caps",
		"driver-root-capabilities": opts.HostRoot + "/proc/driver/nvidia/capabilities",
	}
	if diff := cmp.Diff(wantMounts, mounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	wantArgs := []string{
		"--kind=gpu",
		"--driver-name=gpu.drakit.dev",
		"--driver-root=" + opts.HostRoot,
		"--partitionable-alpha=false",
		"--device-metadata=true",
		"--cdi-dir=" + opts.CDIDir,
		"--kubelet-registrar-dir=" + opts.KubeletRootDir + "/plugins_registry",
		"--kubelet-plugin-dir=" + opts.KubeletRootDir + "/plugins/gpu.drakit.dev",
		"--binding-conditions=false",
		"--v=4",
		"--http-endpoint=127.0.0.1:9470",
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
	if args := alpha.DaemonSet.Spec.Template.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--list-attributes") }) {
		t.Errorf("ListAttributes false: args %v have --list-attributes", args)
	}
	opts.ListAttributes = true
	listed, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	if args := listed.DaemonSet.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--list-attributes=true") {
		t.Errorf("ListAttributes: args %v lack --list-attributes=true", args)
	}
	opts.ListAttributes = false
	opts.DeviceMetadata = false
	plain, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	if args := plain.DaemonSet.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--device-metadata=false") {
		t.Errorf("DeviceMetadata false: args %v lack --device-metadata=false", args)
	}
	opts.BindingConditions = true
	binding, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	if args := binding.DaemonSet.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--binding-conditions=true") {
		t.Errorf("BindingConditions: args %v lack --binding-conditions=true", args)
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
	if !pod.HostNetwork || pod.Containers[0].ImagePullPolicy != corev1.PullNever {
		t.Errorf("driver pod must be hostNetwork and never pull its image")
	}
}

// TestObjectsRuntimeClass checks that the RuntimeClass option is the pod's,
// and that none means the node's default runtime.
func TestObjectsRuntimeClass(t *testing.T) {
	t.Parallel()
	opts := localClusterOptions()
	m, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	if rc := m.DaemonSet.Spec.Template.Spec.RuntimeClassName; rc != nil {
		t.Errorf("runtimeClassName %q without the option, want none", *rc)
	}
	opts.RuntimeClassName = "drakit-mig-manager"
	if m, err = Objects(opts); err != nil {
		t.Fatal(err)
	}
	if rc := m.DaemonSet.Spec.Template.Spec.RuntimeClassName; rc == nil || *rc != "drakit-mig-manager" {
		t.Errorf("runtimeClassName %v, want drakit-mig-manager", rc)
	}
	if sc := m.DaemonSet.Spec.Template.Spec.Containers[0].SecurityContext; sc.Privileged == nil || *sc.Privileged {
		t.Errorf("a RuntimeClass made the driver privileged: %+v", sc)
	}
}

// TestObjectsLeastPrivilege pins the driver pod's privileges: not
// privileged, no escalation, RuntimeDefault seccomp, a read-only root
// filesystem, all capabilities dropped but MKNOD, exactly the host mounts
// the driver uses, each read-only where it only reads, and no host
// namespace but the network.
func TestObjectsLeastPrivilege(t *testing.T) {
	t.Parallel()
	opts := localClusterOptions()
	m, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	pod, c := leastPrivilegePod(t, &m.DriverObjects, "MKNOD")

	r := opts.HostRoot
	wantMounts := map[string]hostMount{
		"plugin-dir":               sameHostPath(opts.KubeletRootDir+"/plugins/gpu.drakit.dev", corev1.HostPathDirectoryOrCreate, false),
		"registrar-dir":            sameHostPath(opts.KubeletRootDir+"/plugins_registry", corev1.HostPathDirectory, false),
		"cdi-dir":                  sameHostPath(opts.CDIDir, corev1.HostPathDirectoryOrCreate, false),
		"driver-root":              sameHostPath(r, corev1.HostPathDirectory, true),
		"driver-root-state":        sameHostPath(r+"/run/drakit-emulator", corev1.HostPathDirectory, false),
		"driver-root-caps":         sameHostPath(r+"/dev/nvidia-caps", corev1.HostPathDirectory, false),
		"driver-root-capabilities": sameHostPath(r+"/proc/driver/nvidia/capabilities", corev1.HostPathDirectory, false),
	}
	if diff := cmp.Diff(wantMounts, hostMounts(t, pod, c)); diff != "" {
		t.Errorf("host mounts (-want +got):\n%s", diff)
	}

	// The writable directories below the driver root are what the
	// emulator's NVML writes; Privileged changes only the security context.
	opts.Privileged = true
	p, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	pc := p.DaemonSet.Spec.Template.Spec.Containers[0]
	wantPrivileged := &corev1.SecurityContext{
		Privileged:             ptr.To(true),
		ReadOnlyRootFilesystem: ptr.To(true),
		RunAsUser:              ptr.To[int64](0),
		RunAsGroup:             ptr.To[int64](0),
	}
	if diff := cmp.Diff(wantPrivileged, pc.SecurityContext); diff != "" {
		t.Errorf("Privileged: security context (-want +got):\n%s", diff)
	}
	p.DaemonSet.Spec.Template.Spec.Containers[0].SecurityContext = c.SecurityContext
	if diff := cmp.Diff(m.DaemonSet, p.DaemonSet); diff != "" {
		t.Errorf("Privileged changes more than the security context (-least privilege +privileged):\n%s", diff)
	}
}

func TestObjectsDoNotShareState(t *testing.T) {
	t.Parallel()
	a, err := Objects(DefaultOptions(KindGPU))
	if err != nil {
		t.Fatal(err)
	}
	a.DaemonSet.Spec.Template.Spec.Containers[0].Args[0] = "changed"
	b, err := Objects(DefaultOptions(KindGPU))
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
		name   string
		mutate func(*Options)
		// wantErrs are the lines of the joined error, after the
		// ErrInvalidOptions prefix; none for valid options.
		wantErrs []string
	}{
		{"valid-defaults", func(*Options) {}, nil},
		{"valid-local-cluster", func(o *Options) { *o = localClusterOptions() }, nil},
		{"valid-local-cluster-as-root", func(o *Options) {
			run := "/root/.local/state/drakit/cluster"
			o.KubeletRootDir, o.CDIDir, o.HostRoot = run+"/kubelet/root", run+"/cdi", run+"/emulator"
		}, nil},
		{"valid-etc-cdi", func(o *Options) { o.CDIDir = "/etc/cdi" }, nil},
		{"valid-run-cdi", func(o *Options) { o.CDIDir = "/run/cdi" }, nil},
		{"valid-no-apiserver-override", func(o *Options) { o.APIServerHost, o.APIServerPort = "", 0 }, nil},
		{"valid-privileged", func(o *Options) { o.Privileged = true }, nil},
		{"valid-runtime-class", func(o *Options) { o.RuntimeClassName = "drakit-mig-manager" }, nil},
		{"invalid-runtime-class", func(o *Options) { o.RuntimeClassName = "MIG manager" }, []string{
			`RuntimeClassName (--runtime-class-name) "MIG manager": ` + strings.Join(validation.IsDNS1123Subdomain("MIG manager"), "; "),
		}},
		{"invalid-driver-name", func(o *Options) { o.DriverName = "GPU" }, []string{
			`DriverName (--driver-name) "GPU": ` + strings.Join(validation.IsDNS1123Subdomain("GPU"), "; "),
		}},
		{"invalid-long-driver-name", func(o *Options) { o.DriverName = strings.Repeat("a", 64) }, []string{
			`DriverName (--driver-name) "` + strings.Repeat("a", 64) + `" is longer than 63 characters`,
		}},
		{"invalid-no-image", func(o *Options) { o.Image = "" }, []string{"Image (--image) is required"}},
		{"invalid-relative-kubelet-root", func(o *Options) { o.KubeletRootDir = "kubelet" }, []string{
			`KubeletRootDir (--kubelet-root-dir) "kubelet" must be a clean absolute path`,
		}},
		{"invalid-unclean-cdi-dir", func(o *Options) { o.CDIDir = "/var/run/cdi/" }, []string{
			`CDIDir (--cdi-dir) "/var/run/cdi/" must be a clean absolute path`,
		}},
		{"invalid-dotdot-driver-root", func(o *Options) { o.HostRoot = "/var/lib/drakit/../emulator" }, []string{
			`HostRoot (--host-root) "/var/lib/drakit/../emulator" must be a clean absolute path`,
		}},
		{"invalid-empty-cdi-dir", func(o *Options) { o.CDIDir = "" }, []string{
			`CDIDir (--cdi-dir) "" must be a clean absolute path`,
		}},
		{"invalid-cdi-dir-etc", func(o *Options) { o.CDIDir = "/etc" }, []string{
			`CDIDir (--cdi-dir) "/etc" is a system directory: the driver pod would mount it from the host`,
		}},
		{"invalid-driver-root-slash", func(o *Options) { o.HostRoot = "/" }, []string{
			`HostRoot (--host-root) "/" is a system directory: the driver pod would mount it from the host`,
		}},
		{"invalid-kubelet-root-var", func(o *Options) { o.KubeletRootDir = "/var" }, []string{
			`KubeletRootDir (--kubelet-root-dir) "/var" is a system directory: the driver pod would mount it from the host`,
		}},
		{"invalid-cdi-dir-var-lib", func(o *Options) { o.CDIDir = "/var/lib" }, []string{
			`CDIDir (--cdi-dir) "/var/lib" is a system directory: the driver pod would mount it from the host`,
		}},
		{"invalid-cdi-dir-kubernetes-config", func(o *Options) { o.CDIDir = "/etc/kubernetes" }, []string{
			`CDIDir (--cdi-dir) "/etc/kubernetes" is a system directory: the driver pod would mount it from the host`,
		}},
		{"invalid-cdi-dir-in-usr", func(o *Options) { o.CDIDir = "/usr/lib/x86_64-linux-gnu" }, []string{
			`CDIDir (--cdi-dir) "/usr/lib/x86_64-linux-gnu" lies in /usr, a system directory: the driver pod would mount it from the host`,
		}},
		{"invalid-driver-root-in-sys", func(o *Options) { o.HostRoot = "/sys/devices" }, []string{
			`HostRoot (--host-root) "/sys/devices" lies in /sys, a system directory: the driver pod would mount it from the host`,
		}},
		{"invalid-kubelet-root-in-proc", func(o *Options) { o.KubeletRootDir = "/proc/1/root" }, []string{
			`KubeletRootDir (--kubelet-root-dir) "/proc/1/root" lies in /proc, a system directory: the driver pod would mount it from the host`,
		}},
		{"invalid-cdi-dir-is-driver-root", func(o *Options) { o.CDIDir = o.HostRoot }, []string{
			`CDIDir (--cdi-dir) "/var/lib/drakit/emulator" and HostRoot (--host-root) "/var/lib/drakit/emulator" overlap: ` +
				`each is mounted with its own access, so neither may contain the other`,
		}},
		{"invalid-cdi-dir-in-driver-root", func(o *Options) { o.CDIDir = o.HostRoot + "/cdi" }, []string{
			`CDIDir (--cdi-dir) "/var/lib/drakit/emulator/cdi" and HostRoot (--host-root) "/var/lib/drakit/emulator" overlap: ` +
				`each is mounted with its own access, so neither may contain the other`,
		}},
		{"invalid-driver-root-contains-kubelet-root", func(o *Options) { o.HostRoot = "/var/lib/drakit"; o.KubeletRootDir = "/var/lib/drakit/kubelet" }, []string{
			`KubeletRootDir (--kubelet-root-dir) "/var/lib/drakit/kubelet" and HostRoot (--host-root) "/var/lib/drakit" overlap: ` +
				`each is mounted with its own access, so neither may contain the other`,
		}},
		{"invalid-bad-port", func(o *Options) { o.APIServerPort = 0 }, []string{"APIServerPort (--apiserver-port) 0 is not a port"}},
		{"invalid-port-without-host", func(o *Options) { o.APIServerHost = "" }, []string{
			"APIServerPort (--apiserver-port) 6443 is set without APIServerHost (--apiserver-host)",
		}},
		{"invalid-no-timeout", func(o *Options) { o.Timeout = 0 }, []string{"Timeout (--timeout) 0s must be positive"}},
		{"invalid-socket-too-long", func(o *Options) { o.KubeletRootDir = "/" + strings.Repeat("k", 80) }, []string{
			`KubeletRootDir (--kubelet-root-dir) "/` + strings.Repeat("k", 80) + `": the driver's socket /` + strings.Repeat("k", 80) +
				`/plugins_registry/gpu.drakit.dev-reg.sock is 122 bytes, 15 over the 107-byte AF_UNIX limit`,
			`KubeletRootDir (--kubelet-root-dir) "/` + strings.Repeat("k", 80) + `": the driver's socket /` + strings.Repeat("k", 80) +
				`/plugins/gpu.drakit.dev/dra.sock is 113 bytes, 6 over the 107-byte AF_UNIX limit`,
		}},
		{"invalid-everything-at-once", func(o *Options) {
			o.Image, o.CDIDir, o.HostRoot, o.Timeout = "", "/etc", "/", -time.Second
		}, []string{
			"Image (--image) is required",
			`CDIDir (--cdi-dir) "/etc" is a system directory: the driver pod would mount it from the host`,
			`HostRoot (--host-root) "/" is a system directory: the driver pod would mount it from the host`,
			"Timeout (--timeout) -1s must be positive",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := DefaultOptions(KindGPU)
			tc.mutate(&o)
			_, objErr := Objects(o)
			checkValidateErrors(t, o.Validate(), tc.wantErrs, objErr)
		})
	}
}

// TestSystemDirsIncludeTheirParents: a directory that contains a system
// directory is refused too, because its parents are listed (or lie in a
// system tree, which refuses everything below it).
func TestSystemDirsIncludeTheirParents(t *testing.T) {
	t.Parallel()
	for _, d := range append(slices.Clone(systemDirs), systemTrees...) {
		for p := filepath.Dir(d); d != "/"; d, p = p, filepath.Dir(p) {
			if !slices.Contains(systemDirs, p) && !slices.ContainsFunc(systemTrees, func(tree string) bool { return within(p, tree) }) {
				t.Errorf("system directory %s: its parent %s is not refused", d, p)
			}
		}
	}
	for _, tree := range systemTrees {
		if !slices.Contains(systemDirs, tree) {
			t.Errorf("system tree %s is not a system directory itself", tree)
		}
	}
}

func TestDefaultOptionsTimeout(t *testing.T) {
	t.Parallel()
	if got := DefaultOptions(KindGPU).Timeout; got < 30*time.Second {
		t.Errorf("default timeout %s is shorter than a driver start on a loaded machine", got)
	}
}

// TestDefaultOptionsAreTheChartDefaults: the chart rendered with nothing
// but its kind (as `helm install` with --set kind=<kind> does) is what
// DefaultOptions(kind) renders, so that the chart as written and drakit
// driver deploy's defaults cannot drift apart.
func TestDefaultOptionsAreTheChartDefaults(t *testing.T) {
	t.Parallel()
	for _, kind := range Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			o := DefaultOptions(kind)
			raw, err := renderValues(map[string]any{"kind": string(kind)}, o.name(), o.namespace())
			if err != nil {
				t.Fatal(err)
			}
			chart, err := sortObjects(raw)
			if err != nil {
				t.Fatal(err)
			}
			rendered, err := Objects(o)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(chart, rendered); diff != "" {
				t.Errorf("DefaultOptions(%s) differ from the chart's defaults (-chart +DefaultOptions):\n%s", kind, diff)
			}
		})
	}
}
