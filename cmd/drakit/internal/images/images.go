// Package images is drakit images: docker-archive images assembled locally,
// imported into the local cluster, and the offline kind node image.
package images

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/cluster"
	"drakit.dev/drakit/cluster/images"
	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/environment/kind/nodeimage"
)

// NewCommand returns drakit images.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Assemble docker-archive images locally (no registry, no Docker), import them into the local cluster; the offline kind node image",
	}

	var pauseOut string
	buildPause := &cobra.Command{
		Use:   "build-pause",
		Short: "Compile the static pause program (gcc -static) and write it as " + images.PauseImage,
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return images.BuildPause(c.Context(), pauseOut) },
	}
	buildPause.Flags().StringVarP(&pauseOut, "output", "o", "", "archive to write")
	_ = buildPause.MarkFlagRequired("output")
	cmd.AddCommand(buildPause)

	var (
		spec  images.Spec
		files []string
		out   string
	)
	build := &cobra.Command{
		Use:   "build",
		Short: "Build a single-layer image from host files",
		Example: `  drakit images build --name drakit.dev/probe:dev --file /drakit-probe=bin/drakit-probe \
    --entrypoint /drakit-probe --entrypoint=--hold --shared-libs -o probe.tar`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			spec.Files = map[string]string{}
			for _, f := range files {
				ctrPath, hostPath, ok := strings.Cut(f, "=")
				if !ok {
					return fmt.Errorf("--file %q: want CONTAINER_PATH=HOST_PATH", f)
				}
				if _, dup := spec.Files[ctrPath]; dup {
					return fmt.Errorf("--file %q: container path %s given twice", f, ctrPath)
				}
				spec.Files[ctrPath] = hostPath
			}
			return images.Build(c.Context(), spec, out)
		},
	}
	build.Flags().StringVar(&spec.Name, "name", "", "image name with tag, e.g. drakit.dev/probe:dev")
	build.Flags().StringArrayVar(&files, "file", nil, "CONTAINER_PATH=HOST_PATH, repeatable")
	build.Flags().StringArrayVar(&spec.Entrypoint, "entrypoint", nil, "one entrypoint argument per use, in order (use --entrypoint=--flag for flags)")
	build.Flags().StringArrayVar(&spec.Env, "env", nil, "KEY=VALUE, repeatable")
	build.Flags().BoolVar(&spec.WithSharedLibraries, "shared-libs", false, "also copy the ELF interpreter and the shared libraries ldd reports for each file")
	build.Flags().StringVarP(&out, "output", "o", "", "archive to write")
	_ = build.MarkFlagRequired("name")
	_ = build.MarkFlagRequired("output")
	cmd.AddCommand(build)

	cfg := cluster.DefaultConfig()
	importCmd := &cobra.Command{
		Use:   "import ARCHIVE...",
		Short: "Import docker-archive images into the running cluster's containerds, every node's (namespace k8s.io)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := cfg.Validate(); err != nil {
				return err
			}
			sort.Strings(args)
			for _, a := range args {
				if err := cluster.ImportImage(c.Context(), cfg, a); err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "imported %s\n", a)
			}
			return nil
		},
	}
	cli.BindClusterFlags(importCmd.Flags(), &cfg)
	cmd.AddCommand(importCmd)

	var (
		in     nodeimage.Inputs
		rootfs string
		image  string
	)
	buildKindNode := &cobra.Command{
		Use:   "build-kind-node --rootfs DIR [--image NAME] (component flags)",
		Short: "Assemble the offline kind node image (drakit env --provider kind) on a debootstrapped root filesystem and docker import it",
		Long: `build-kind-node carries out the node image plan (environment/kind/nodeimage)
on --rootfs, a Debian root filesystem made by debootstrap with the packages
nodeimage.Packages lists, then tars it into docker import as --image.
scripts/kind-node-image.sh runs every step, debootstrap included.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			plan, err := nodeimage.NewPlan(in)
			if err != nil {
				return err
			}
			if err := plan.Apply(c.Context(), rootfs); err != nil {
				return err
			}
			return plan.Import(c.Context(), rootfs, image)
		},
	}
	f := buildKindNode.Flags()
	f.StringVar(&rootfs, "rootfs", "", "debootstrapped root filesystem to assemble the image on (changed in place)")
	f.StringVar(&image, "image", nodeimage.Image+":v1.37.2", "name of the imported node image")
	f.StringVar(&in.KubernetesBin, "kubernetes-bin", "", "directory with kubelet, kubectl, kube-apiserver, kube-controller-manager, kube-scheduler")
	f.StringVar(&in.KubeadmBin, "kubeadm-bin", "", "directory with kubeadm")
	f.StringVar(&in.ContainerdBin, "containerd-bin", "", "directory with containerd, ctr, containerd-shim-runc-v2")
	f.StringVar(&in.CrictlBin, "crictl-bin", "", "directory with crictl")
	f.StringVar(&in.EtcdBin, "etcd-bin", "", "directory with etcd")
	f.StringVar(&in.KindBaseFiles, "kind-base-files", "", "images/base/files of sigs.k8s.io/kind in the Go module cache")
	f.StringVar(&in.PauseArchive, "pause-archive", "", "pause image archive (drakit images build-pause)")
	f.StringVar(&in.KubernetesVersion, "kubernetes-version", "v1.37.2", "version of the control-plane images and /kind/version")
	f.StringVar(&in.EtcdVersion, "etcd-version", "3.7.0-0", "tag of the etcd image (kubeadm's DefaultEtcdVersion)")
	_ = buildKindNode.MarkFlagRequired("rootfs")
	kindNodePackages := &cobra.Command{
		Use:   "kind-node-packages",
		Short: "Print the Debian packages of the kind node image's root filesystem, comma-separated (debootstrap --include)",
		Args:  cobra.NoArgs,
		Run: func(c *cobra.Command, _ []string) {
			fmt.Fprintln(c.OutOrStdout(), strings.Join(nodeimage.Packages, ","))
		},
	}
	cmd.AddCommand(buildKindNode, kindNodePackages)
	return cmd
}
