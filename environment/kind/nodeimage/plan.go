package nodeimage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"drakit.dev/drakit/cluster/images"
)

// Names and tags the node image uses.
const (
	// Image is the default name of the node image.
	Image = "drakit.dev/kind-node"
	// SandboxImage is kind's containerd sandbox image (its config.toml):
	// the pause image is tagged so after import.
	SandboxImage = "registry.k8s.io/pause:3.10"
	// ImagesDir holds the image archives the node imports when it boots.
	ImagesDir = "/kind/images"
	// CNIConfig is the static CNI configuration that replaces kindnetd.
	CNIConfig = "/etc/cni/net.d/10-drakit-ptp.conflist"
)

// Inputs are what the node image is assembled from: drakit's cached
// components (scripts/build-components.sh, plus kubeadm that
// scripts/kind-node-image.sh builds) and the base files of kind's own base
// image from the kind module.
type Inputs struct {
	// KubernetesBin holds kubelet, kubectl, kube-apiserver,
	// kube-controller-manager and kube-scheduler; KubeadmBin holds kubeadm
	// (scripts/build-components.sh builds no kubeadm, the local cluster
	// needs none).
	KubernetesBin string
	KubeadmBin    string
	// ContainerdBin holds containerd, ctr and containerd-shim-runc-v2.
	ContainerdBin string
	// CrictlBin holds crictl; EtcdBin holds etcd.
	CrictlBin string
	EtcdBin   string
	// KindBaseFiles is images/base/files of sigs.k8s.io/kind in the Go
	// module cache: entrypoint, containerd and kubelet units, kind's
	// scripts.
	KindBaseFiles string
	// PauseArchive is the pause image archive (images.BuildPause).
	PauseArchive string
	// KubernetesVersion tags the control-plane images and is written to
	// /kind/version (kind reads it); EtcdVersion tags the etcd image with
	// the version kubeadm asks for (its constants.DefaultEtcdVersion).
	KubernetesVersion string
	EtcdVersion       string
}

// File is a host file copied into the root filesystem.
type File struct {
	Src  string
	Dst  string
	Mode fs.FileMode
}

// Content is a file the plan writes.
type Content struct {
	Dst     string
	Content string
	Mode    fs.FileMode
}

// Link is a symbolic link Dst -> Target.
type Link struct {
	Dst    string
	Target string
}

// ImageArchive is an image archive written to Dst from Spec.
type ImageArchive struct {
	Dst  string
	Spec images.Spec
}

// Plan is the node image's assembly on a debootstrapped Debian root
// filesystem (Packages), in Apply's order: Removes, Copies, Writes, Links,
// Images, Appends, the CRI base spec; then the root filesystem is imported with Changes.
type Plan struct {
	Removes []string
	Copies  []File
	Writes  []Content
	Links   []Link
	Images  []ImageArchive
	// Appends add lines to existing files.
	Appends []Content
	// CRIBaseFrom is the ctr whose `ctr oci spec` becomes CRIBaseSpec.
	CRIBaseFrom string
	// Changes are docker import's --change instructions.
	Changes []string
}

// Packages are the Debian packages of the root filesystem (debootstrap
// --include): kind's base image's list (images/base/Dockerfile) less what
// only rootless or storage tests use (fuse-overlayfs, nfs-common,
// open-iscsi), plus systemd-sysv for /sbin/init, and runc and the CNI
// plugins, which kind builds from source and Debian packages.
var Packages = []string{
	"systemd", "systemd-sysv", "dbus", "conntrack", "iptables", "nftables", "iproute2", "ethtool",
	"util-linux", "mount", "kmod", "libseccomp2", "pigz", "e2fsprogs", "bash", "ca-certificates",
	"curl", "jq", "procps", "runc", "containernetworking-plugins",
}

// cniPlugins are the plugins kind's base image installs in /opt/cni/bin;
// Debian's containernetworking-plugins has them in /usr/lib/cni.
var cniPlugins = []string{"host-local", "loopback", "portmap", "ptp"}

// cniConfig is a ptp network with host-local addresses in kind's default
// pod subnet: pods on one node reach each other and the node, and, masqueraded
// behind the node's address, the other nodes (the API server on the control
// plane), which is all the kit's probe pods need. It replaces kindnetd (no
// image offline); two nodes hand out addresses from the same range, so pods
// are not routed between nodes.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "drakit",
  "plugins": [
    {"type": "ptp", "ipMasq": true, "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/16"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`

// importUnit imports the image archives into containerd's k8s.io namespace
// before the kubelet starts (kind's node-image build imports them at build
// time through a running container; an import at boot needs none), then
// tags the pause image as kind's sandbox image.
const importUnit = `[Unit]
Description=Import the offline node image's container images
After=containerd.service
Requires=containerd.service
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'for f in ` + ImagesDir + `/*.tar; do ctr --namespace=k8s.io images import --all-platforms --digests "$f" || exit 1; done'
ExecStart=/usr/local/bin/ctr --namespace=k8s.io images tag --force ` + images.PauseImage + ` ` + SandboxImage + `

[Install]
WantedBy=multi-user.target
`

// enabledUnits are the units enabled as `systemctl enable` would, by their
// WantedBy=multi-user.target.
var enabledUnits = []string{"containerd.service", "kubelet.service", "undo-mount-hacks.service", "drakit-images.service"}

// NewPlan returns the assembly of the node image from in.
func NewPlan(in Inputs) (*Plan, error) {
	var errs []error
	for name, v := range map[string]string{
		"kubernetesBin": in.KubernetesBin, "kubeadmBin": in.KubeadmBin, "containerdBin": in.ContainerdBin, "crictlBin": in.CrictlBin,
		"etcdBin": in.EtcdBin, "kindBaseFiles": in.KindBaseFiles, "pauseArchive": in.PauseArchive,
		"kubernetesVersion": in.KubernetesVersion, "etcdVersion": in.EtcdVersion,
	} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s: required", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("plan node image: %w", err)
	}
	p := &Plan{
		// kind's base Dockerfile: no units but the ones it enables.
		Removes: []string{
			"lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
			"lib/systemd/system/multi-user.target.wants/*",
			"etc/systemd/system/*.wants/*",
			"lib/systemd/system/local-fs.target.wants/*",
			"lib/systemd/system/sockets.target.wants/*udev*",
			"lib/systemd/system/sockets.target.wants/*initctl*",
			"lib/systemd/system/basic.target.wants/*",
		},
		// kind's base image also sets STOPSIGNAL SIGRTMIN+3; Debian's
		// docker 20.10 import refuses it ("stopsignal is not a valid change
		// command"), and kind deletes nodes with docker rm -f anyway.
		Changes: []string{
			"ENV container=docker",
			`ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]`,
		},
	}
	base, err := baseFiles(in.KindBaseFiles)
	if err != nil {
		return nil, err
	}
	p.Copies = append(p.Copies, base...)
	for _, b := range []struct{ dir, dst string }{
		{in.KubeadmBin, "/usr/bin/kubeadm"}, {in.KubernetesBin, "/usr/bin/kubelet"}, {in.KubernetesBin, "/usr/bin/kubectl"},
		{in.ContainerdBin, "/usr/local/bin/containerd"}, {in.ContainerdBin, "/usr/local/bin/ctr"},
		{in.ContainerdBin, "/usr/local/bin/containerd-shim-runc-v2"}, {in.CrictlBin, "/usr/local/bin/crictl"},
	} {
		p.Copies = append(p.Copies, File{Src: filepath.Join(b.dir, path.Base(b.dst)), Dst: b.dst, Mode: 0o755})
	}
	p.Copies = append(p.Copies, File{Src: in.PauseArchive, Dst: path.Join(ImagesDir, "pause.tar"), Mode: 0o644})
	p.Writes = []Content{
		{Dst: "/kind/version", Content: in.KubernetesVersion, Mode: 0o644},
		{Dst: CNIConfig, Content: cniConfig, Mode: 0o644},
		{Dst: "/etc/systemd/system/drakit-images.service", Content: importUnit, Mode: 0o644},
		{Dst: "/etc/kubernetes/manifests/.keep", Mode: 0o644},
	}
	for _, u := range enabledUnits {
		p.Links = append(p.Links, Link{Dst: "/etc/systemd/system/multi-user.target.wants/" + u, Target: "/etc/systemd/system/" + u})
	}
	p.Links = append(p.Links, Link{Dst: "/etc/systemd/system/systemd-binfmt.service", Target: "/dev/null"})
	for _, c := range cniPlugins {
		p.Links = append(p.Links, Link{Dst: "/opt/cni/bin/" + c, Target: "/usr/lib/cni/" + c})
	}
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		p.Images = append(p.Images, controlPlaneImage(c, filepath.Join(in.KubernetesBin, c), "registry.k8s.io/"+c+":"+in.KubernetesVersion))
	}
	p.Images = append(p.Images, controlPlaneImage("etcd", filepath.Join(in.EtcdBin, "etcd"), "registry.k8s.io/etcd:"+in.EtcdVersion))
	p.CRIBaseFrom = filepath.Join(in.ContainerdBin, "ctr")
	p.Appends = []Content{{Dst: "/etc/systemd/journald.conf", Content: "ReadKMsg=no\n"}}
	return p, nil
}

// controlPlaneImage is a single-layer image with the binary at
// /usr/local/bin/<name>, where kubeadm's static pods run it by name, with
// its shared libraries when it has any.
func controlPlaneImage(name, bin, ref string) ImageArchive {
	return ImageArchive{
		Dst: path.Join(ImagesDir, name+".tar"),
		Spec: images.Spec{
			Name:                ref,
			Files:               map[string]string{"/usr/local/bin/" + name: bin},
			Entrypoint:          []string{"/usr/local/bin/" + name},
			WithSharedLibraries: true,
		},
	}
}

// baseFiles lists kind's base files with the modes its Dockerfile gives
// them: executables in usr/local/bin and kind/bin, everything else 0644.
// LICENSES/ is kind's license notes for what it builds; it is left out.
func baseFiles(dir string) ([]File, error) {
	var out []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "LICENSES" {
				return fs.SkipDir
			}
			return nil
		}
		mode := fs.FileMode(0o644)
		if strings.HasPrefix(rel, "usr/local/bin/") || strings.HasPrefix(rel, "kind/bin/") {
			mode = 0o755
		}
		out = append(out, File{Src: p, Dst: "/" + rel, Mode: mode})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list kind base files in %s: %w", dir, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("list kind base files in %s: none", dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dst < out[j].Dst })
	return out, nil
}

// Destinations lists every path the plan creates in the root filesystem,
// sorted: what a reviewer checks against kind's base image.
func (p *Plan) Destinations() []string {
	var out []string
	for _, f := range p.Copies {
		out = append(out, f.Dst)
	}
	for _, w := range p.Writes {
		out = append(out, w.Dst)
	}
	for _, l := range p.Links {
		out = append(out, l.Dst)
	}
	for _, i := range p.Images {
		out = append(out, i.Dst)
	}
	out = append(out, CRIBaseSpec)
	sort.Strings(out)
	return out
}

// ImportArgs is the docker command line that imports the root filesystem
// tar from standard input as image.
func (p *Plan) ImportArgs(image string) []string {
	args := []string{"import"}
	for _, c := range p.Changes {
		args = append(args, "--change", c)
	}
	return append(args, "-", image)
}

// rootPath is dst inside rootfs.
func rootPath(rootfs, dst string) string {
	return filepath.Join(rootfs, filepath.FromSlash(strings.TrimPrefix(dst, "/")))
}

// mkdirFor creates dst's parent inside rootfs.
func mkdirFor(rootfs, dst string) error {
	return os.MkdirAll(filepath.Dir(rootPath(rootfs, dst)), 0o755)
}
