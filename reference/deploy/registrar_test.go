package deploy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// A driver behind drakit interpose registers in a directory of its own:
// the flag and the host path follow RegistrarDir, nothing else changes.
func TestObjectsRegistrarDir(t *testing.T) {
	opts := localClusterOptions()
	opts.RegistrarDir = opts.KubeletRootDir + "/plugins/interposed"
	m, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	pod := m.DaemonSet.Spec.Template.Spec
	if !slices.Contains(pod.Containers[0].Args, "--kubelet-registrar-dir="+opts.RegistrarDir) {
		t.Errorf("args %v, want --kubelet-registrar-dir=%s", pod.Containers[0].Args, opts.RegistrarDir)
	}
	for _, v := range pod.Volumes {
		if v.Name == "registrar-dir" && (v.HostPath == nil || v.HostPath.Path != opts.RegistrarDir) {
			t.Errorf("volume registrar-dir %+v, want host path %s", v.VolumeSource, opts.RegistrarDir)
		}
	}

	opts.RegistrarDir = "/srv/registry"
	if err := opts.Validate(); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "RegistrarDir (--registrar-dir)") {
		t.Errorf("Validate with a registrar dir outside the kubelet root: %v", err)
	}
}
