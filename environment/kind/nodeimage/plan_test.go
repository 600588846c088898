package nodeimage

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeInputs lays out components and kind base files as the cache and the
// kind module hold them, with small stand-in files.
func fakeInputs(t *testing.T) Inputs {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, content string, mode os.FileMode) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("kubeadm/bin/kubeadm", "kubeadm", 0o755)
	for _, b := range []string{"kubelet", "kubectl", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		write("k8s/bin/"+b, "#!/bin/true\n"+b, 0o755)
	}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2"} {
		write("containerd/bin/"+b, b, 0o755)
	}
	// ctr oci spec prints a default spec with rlimits and a hook.
	write("containerd/bin/ctr", "#!/bin/sh\necho '{\"process\":{\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\"}],\"cwd\":\"/\"},\"hooks\":{\"createContainer\":[{\"path\":\"/x\"}]}}'\n", 0o755)
	write("crictl/bin/crictl", "crictl", 0o755)
	write("etcd/bin/etcd", "etcd", 0o755)
	for _, f := range []string{
		"usr/local/bin/entrypoint", "usr/local/bin/clean-install", "kind/bin/mount-product-files.sh",
		"etc/containerd/config.toml", "etc/systemd/system/kubelet.service", "etc/systemd/system/containerd.service",
		"etc/systemd/system/kubelet.service.d/10-kubeadm.conf", "LICENSES/README.txt",
	} {
		write("base/"+f, f, 0o644)
	}
	return Inputs{
		KubernetesBin: filepath.Join(dir, "k8s/bin"), KubeadmBin: filepath.Join(dir, "kubeadm/bin"), ContainerdBin: filepath.Join(dir, "containerd/bin"),
		CrictlBin: filepath.Join(dir, "crictl/bin"), EtcdBin: filepath.Join(dir, "etcd/bin"),
		KindBaseFiles: filepath.Join(dir, "base"), PauseArchive: write("pause.tar", "pause archive", 0o644),
		KubernetesVersion: "v1.37.2", EtcdVersion: "3.7.0-0",
	}
}

func TestNewPlanDestinations(t *testing.T) {
	p, err := NewPlan(fakeInputs(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/etc/cni/net.d/10-drakit-ptp.conflist",
		"/etc/containerd/config.toml",
		"/etc/containerd/cri-base.json",
		"/etc/kubernetes/manifests/.keep",
		"/etc/systemd/system/containerd.service",
		"/etc/systemd/system/drakit-images.service",
		"/etc/systemd/system/kubelet.service",
		"/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
		"/etc/systemd/system/multi-user.target.wants/containerd.service",
		"/etc/systemd/system/multi-user.target.wants/drakit-images.service",
		"/etc/systemd/system/multi-user.target.wants/kubelet.service",
		"/etc/systemd/system/multi-user.target.wants/undo-mount-hacks.service",
		"/etc/systemd/system/systemd-binfmt.service",
		"/kind/bin/mount-product-files.sh",
		"/kind/images/etcd.tar",
		"/kind/images/kube-apiserver.tar",
		"/kind/images/kube-controller-manager.tar",
		"/kind/images/kube-scheduler.tar",
		"/kind/images/pause.tar",
		"/kind/version",
		"/opt/cni/bin/host-local",
		"/opt/cni/bin/loopback",
		"/opt/cni/bin/portmap",
		"/opt/cni/bin/ptp",
		"/usr/bin/kubeadm",
		"/usr/bin/kubectl",
		"/usr/bin/kubelet",
		"/usr/local/bin/clean-install",
		"/usr/local/bin/containerd",
		"/usr/local/bin/containerd-shim-runc-v2",
		"/usr/local/bin/crictl",
		"/usr/local/bin/ctr",
		"/usr/local/bin/entrypoint",
	}
	if diff := cmp.Diff(want, p.Destinations()); diff != "" {
		t.Errorf("Destinations (-want +got):\n%s", diff)
	}
	var tags []string
	for _, i := range p.Images {
		tags = append(tags, i.Spec.Name)
		if err := i.Spec.Validate(); err != nil {
			t.Errorf("image %s: %v", i.Spec.Name, err)
		}
	}
	// kubeadm 1.37.2's static pods name these images (constants.go:
	// DefaultEtcdVersion 3.7.0-0).
	wantTags := []string{"registry.k8s.io/kube-apiserver:v1.37.2", "registry.k8s.io/kube-controller-manager:v1.37.2",
		"registry.k8s.io/kube-scheduler:v1.37.2", "registry.k8s.io/etcd:3.7.0-0"}
	if !cmp.Equal(tags, wantTags) {
		t.Errorf("image tags %v, want %v", tags, wantTags)
	}
	wantImport := []string{"import", "--change", "ENV container=docker",
		"--change", `ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]`, "-", "drakit.dev/kind-node:v1.37.2"}
	if diff := cmp.Diff(wantImport, p.ImportArgs("drakit.dev/kind-node:v1.37.2")); diff != "" {
		t.Errorf("ImportArgs (-want +got):\n%s", diff)
	}
	for _, pkg := range []string{"systemd", "containerd", "runc", "containernetworking-plugins"} {
		if pkg == "containerd" {
			if slices.Contains(Packages, pkg) {
				t.Error("Packages has Debian's containerd; the node runs drakit's cached one")
			}
			continue
		}
		if !slices.Contains(Packages, pkg) {
			t.Errorf("Packages lacks %s", pkg)
		}
	}
}

func TestNewPlanRefusesMissingInputs(t *testing.T) {
	in := fakeInputs(t)
	in.EtcdBin, in.KubernetesVersion = "", ""
	_, err := NewPlan(in)
	if err == nil || !strings.Contains(err.Error(), "etcdBin: required") || !strings.Contains(err.Error(), "kubernetesVersion: required") {
		t.Errorf("NewPlan = %v, want etcdBin and kubernetesVersion required", err)
	}
}

// Apply on a fake root: modes, links, removals, the import unit, appends.
// The control-plane images are built from the stand-in binaries (shell
// scripts, no shared libraries).
func TestApply(t *testing.T) {
	in := fakeInputs(t)
	p, err := NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, f := range []string{"lib/systemd/system/multi-user.target.wants/getty.target", "etc/systemd/system/getty.target.wants/getty@tty1.service", "etc/systemd/journald.conf"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), []byte("[Journal]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Apply(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"lib/systemd/system/multi-user.target.wants/getty.target", "etc/systemd/system/getty.target.wants/getty@tty1.service"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("%s not removed: %v", gone, err)
		}
	}
	for rel, mode := range map[string]os.FileMode{"usr/bin/kubeadm": 0o755, "usr/local/bin/entrypoint": 0o755, "kind/bin/mount-product-files.sh": 0o755, "etc/containerd/config.toml": 0o644} {
		fi, err := os.Stat(filepath.Join(root, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %o, want %o", rel, fi.Mode().Perm(), mode)
		}
	}
	if target, err := os.Readlink(filepath.Join(root, "etc/systemd/system/multi-user.target.wants/kubelet.service")); err != nil || target != "/etc/systemd/system/kubelet.service" {
		t.Errorf("kubelet not enabled: %q %v", target, err)
	}
	if _, err := os.Stat(filepath.Join(root, "LICENSES")); !os.IsNotExist(err) {
		t.Errorf("LICENSES copied: %v", err)
	}
	unit, err := os.ReadFile(filepath.Join(root, "etc/systemd/system/drakit-images.service"))
	if err != nil || !strings.Contains(string(unit), "images tag --force drakit.dev/pause:dev registry.k8s.io/pause:3.10") || !strings.Contains(string(unit), "Before=kubelet.service") {
		t.Errorf("import unit: %v\n%s", err, unit)
	}
	journald, _ := os.ReadFile(filepath.Join(root, "etc/systemd/journald.conf"))
	if string(journald) != "[Journal]\nReadKMsg=no\n" {
		t.Errorf("journald.conf %q", journald)
	}
	for _, img := range []string{"kube-apiserver", "etcd", "pause"} {
		fi, err := os.Stat(filepath.Join(root, "kind/images", img+".tar"))
		if err != nil || fi.Size() == 0 {
			t.Errorf("image archive %s: %v", img, err)
		}
	}
	base, _ := os.ReadFile(filepath.Join(root, "etc/containerd/cri-base.json"))
	if want := "{\n  \"hooks\": {\n    \"createContainer\": [\n      {\n        \"path\": \"/x\"\n      },\n      {\n        \"path\": \"/kind/bin/mount-product-files.sh\"\n      }\n    ]\n  },\n  \"process\": {\n    \"cwd\": \"/\"\n  }\n}\n"; string(base) != want {
		t.Errorf("cri-base.json:\n%s\nwant\n%s", base, want)
	}
	if v, _ := os.ReadFile(filepath.Join(root, "kind/version")); string(v) != "v1.37.2" {
		t.Errorf("/kind/version %q", v)
	}
}
