package exec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	emuexec "drakit.dev/drakit/emulator/exec"
)

// exampleRoot is the emulator root's placeholder in the example manifest.
const exampleRoot = "/var/lib/drakit/emulator"

// TestDaemonSetExampleCoversThePlan checks the worked DaemonSet of
// docs/examples against what Run lays over a rendered dgx-h100 root: every
// path outside /proc that Run mounts is mounted in the pod (itself or a
// directory above it) from the same place in the root, nothing is mounted
// inside /proc (runc refuses it), and every volume from the root exists
// there with the hostPath type the manifest declares.
func TestDaemonSetExampleCoversThePlan(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "deploy", "third-party-gpu-driver-daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(b, &ds); err != nil {
		t.Fatalf("example is not a DaemonSet: %v", err)
	}
	spec := ds.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("example has %d containers, want 1", len(spec.Containers))
	}
	volumes := map[string]*corev1.HostPathVolumeSource{}
	for _, v := range spec.Volumes {
		if v.HostPath == nil {
			t.Fatalf("volume %s is not a hostPath", v.Name)
		}
		volumes[v.Name] = v.HostPath
	}
	mounts := map[string]string{} // mount path -> host path
	for _, m := range spec.Containers[0].VolumeMounts {
		hp, ok := volumes[m.Name]
		if !ok {
			t.Fatalf("mount %s names no volume", m.MountPath)
		}
		if m.MountPath == "/proc" || strings.HasPrefix(m.MountPath, "/proc/") {
			t.Errorf("example mounts %s: runc refuses mounts inside /proc", m.MountPath)
		}
		mounts[m.MountPath] = hp.Path
	}
	if mounts["/run/drakit-emulator"] != exampleRoot+"/run/drakit-emulator" {
		t.Errorf("example mounts %q at /run/drakit-emulator, want the root's state directory", mounts["/run/drakit-emulator"])
	}

	needsRoot(t)
	root, p := renderRoot(t, "dgx-h100")
	plan, err := emuexec.NewPlan(configFor(root))
	if err != nil {
		t.Fatal(err)
	}
	libDir := emuexec.DefaultLibraryDir
	if real, err := filepath.EvalSymlinks(libDir); err == nil {
		libDir = real
	}
	for _, m := range plan.Mounts {
		target := m.Target
		if rest, ok := strings.CutPrefix(target, libDir+"/"); ok {
			target = filepath.Join(emuexec.DefaultLibraryDir, rest)
		}
		if strings.HasPrefix(target, "/proc/") {
			continue // documented in the example: exec inside the pod
		}
		want := exampleRoot + strings.TrimPrefix(m.Source, root)
		if m.Link != "" {
			want = exampleRoot + "/usr/lib/x86_64-linux-gnu/" + filepath.Base(target)
		}
		var got string
		for mp, hp := range mounts {
			if target == mp || strings.HasPrefix(target, mp+"/") {
				got = hp + strings.TrimPrefix(target, mp)
			}
		}
		if got != want {
			t.Errorf("exec mounts %s on %s; the example mounts %q there, want %q", m.Source+m.Link, target, got, want)
		}
	}
	for name, hp := range volumes {
		rel, ok := strings.CutPrefix(hp.Path, exampleRoot)
		if !ok {
			continue // the kubelet's and CDI directories
		}
		fi, err := os.Stat(root + rel)
		if err != nil {
			t.Errorf("volume %s: %v (profile %s)", name, err, p.Metadata.Name)
			continue
		}
		var ok2 bool
		switch *hp.Type {
		case corev1.HostPathDirectory:
			ok2 = fi.IsDir()
		case corev1.HostPathCharDev:
			ok2 = fi.Mode()&os.ModeCharDevice != 0
		case corev1.HostPathFile:
			ok2 = fi.Mode().IsRegular()
		}
		if !ok2 {
			t.Errorf("volume %s: %s is %v, not a %s", name, hp.Path, fi.Mode(), *hp.Type)
		}
	}
}
