package deploy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The checks the three drivers' deployment tests share.

// checkGolden compares objs, as YAML documents separated by "---", with
// testdata/<golden>; -update rewrites the file.
func checkGolden(t *testing.T, objs []runtime.Object, golden string) {
	t.Helper()
	var docs []string
	for _, obj := range objs {
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	got := strings.Join(docs, "---\n")
	path := filepath.Join("testdata", golden)
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
}

// hostMount is how the driver container mounts a hostPath volume.
type hostMount struct {
	HostPath, MountPath string
	Type                corev1.HostPathType
	ReadOnly            bool
}

// hostMounts returns container c's mounts of pod's volumes by volume name.
// It reports a volume that is not a hostPath volume with a type, one
// mounted twice or not at all, and a mount with a sub-path, propagation or
// recursive read-only setting.
func hostMounts(t *testing.T, pod corev1.PodSpec, c corev1.Container) map[string]hostMount {
	t.Helper()
	volumes := map[string]corev1.HostPathVolumeSource{}
	for _, v := range pod.Volumes {
		if v.HostPath == nil || v.HostPath.Type == nil {
			t.Errorf("volume %s is not a hostPath volume with a type", v.Name)
			continue
		}
		volumes[v.Name] = *v.HostPath
	}
	got := map[string]hostMount{}
	for _, vm := range c.VolumeMounts {
		if _, dup := got[vm.Name]; dup {
			t.Errorf("volume %s is mounted twice", vm.Name)
		}
		if vm.SubPath != "" || vm.SubPathExpr != "" || vm.MountPropagation != nil || vm.RecursiveReadOnly != nil {
			t.Errorf("mount of %s has a sub-path, propagation or recursive read-only setting: %+v", vm.Name, vm)
		}
		v := volumes[vm.Name]
		got[vm.Name] = hostMount{v.Path, vm.MountPath, ptr.Deref(v.Type, ""), vm.ReadOnly}
	}
	if len(volumes) != len(got) {
		t.Errorf("pod has %d volumes, %d of them mounted", len(volumes), len(got))
	}
	return got
}

// sameHostPath is a host mount at its own path.
func sameHostPath(p string, typ corev1.HostPathType, readOnly bool) hostMount {
	return hostMount{p, p, typ, readOnly}
}

// checkValidateErrors checks the error of an options' Validate: nil when
// wantErrs is, else ErrInvalidOptions with exactly wantErrs, one a line;
// objectsErr, the error of rendering the same options, must agree.
func checkValidateErrors(t *testing.T, err error, wantErrs []string, objectsErr error) {
	t.Helper()
	switch {
	case wantErrs == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case wantErrs != nil && err == nil:
		t.Fatalf("no error, want %q", wantErrs)
	case err != nil && !errors.Is(err, ErrInvalidOptions):
		t.Fatalf("error %v is not ErrInvalidOptions", err)
	case err != nil:
		got := strings.Split(strings.TrimPrefix(err.Error(), ErrInvalidOptions.Error()+": "), "\n")
		if diff := cmp.Diff(wantErrs, got); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
	}
	if (objectsErr == nil) != (err == nil) {
		t.Errorf("rendering error %v disagrees with Validate error %v", objectsErr, err)
	}
}
