package deploy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestTPUObjectsGolden(t *testing.T) {
	t.Parallel()
	m, err := Objects(DefaultOptions(KindTPU))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, m.List(), "tpu-default.yaml")
}

// TestTPUObjectsRendered: the local cluster's paths land in the plugin's
// flags and mounts (sysfs and tpu-env read-only), the shapes and driver
// name in the controller's flags and both classes' selectors.
func TestTPUObjectsRendered(t *testing.T) {
	t.Parallel()
	opts := DefaultOptions(KindTPU)
	run := "/home/dev/.local/state/drakit/cluster"
	opts.KubeletRootDir, opts.CDIDir, opts.HostRoot = run+"/kubelet/root", run+"/cdi", run+"/emulator"
	opts.DriverName, opts.Shapes = "tpu.example.com", "2x2x2,full"
	m, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	pod, c := leastPrivilegePod(t, &m.DriverObjects)
	wantMounts := map[string]hostMount{
		"plugin-dir":    sameHostPath(opts.KubeletRootDir+"/plugins/tpu.example.com", corev1.HostPathDirectoryOrCreate, false),
		"registrar-dir": sameHostPath(opts.KubeletRootDir+"/plugins_registry", corev1.HostPathDirectory, false),
		"cdi-dir":       sameHostPath(opts.CDIDir, corev1.HostPathDirectoryOrCreate, false),
		"sysfs":         sameHostPath(opts.HostRoot+"/sys", corev1.HostPathDirectory, true),
		"metadata":      sameHostPath(opts.HostRoot+"/run/drakit-emulator/metadata/instance/attributes", corev1.HostPathDirectory, true),
	}
	if diff := cmp.Diff(wantMounts, hostMounts(t, pod, c)); diff != "" {
		t.Errorf("host mounts (-want +got):\n%s", diff)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--host-root=" + opts.HostRoot, "--state-dir=" + opts.KubeletRootDir + "/plugins/tpu.example.com", "--driver-name=tpu.example.com"} {
		if !strings.Contains(args, want) {
			t.Errorf("plugin args %q lack %q", args, want)
		}
	}
	cargs := strings.Join(m.Controller.Deployment.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(cargs, "--shapes=2x2x2,full") || !strings.Contains(cargs, "--driver-name=tpu.example.com") {
		t.Errorf("controller args %q", cargs)
	}
	if m.Classes[0].Name != "subslice.tpu.example.com" ||
		!strings.Contains(m.Classes[0].Spec.Selectors[0].CEL.Expression, `== "subslice"`) ||
		!strings.Contains(m.DeviceClass.Spec.Selectors[0].CEL.Expression, `== "chip"`) {
		t.Errorf("classes %s %q / %s %q", m.DeviceClass.Name, m.DeviceClass.Spec.Selectors[0].CEL.Expression,
			m.Classes[0].Name, m.Classes[0].Spec.Selectors[0].CEL.Expression)
	}
	opts.Shapes = "2x2"
	if _, err := Objects(opts); err != nil {
		t.Errorf("shape 2x2: %v", err)
	}
	opts.Shapes = "2x2x0"
	if _, err := Objects(opts); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "--shapes") {
		t.Errorf("bad shapes: %v", err)
	}
}
