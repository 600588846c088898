package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/environment/kind/nodeimage"
)

func newKindCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kind",
		Short: "kind clusters offline: the node image built from drakit's components",
	}
	var (
		in     nodeimage.Inputs
		rootfs string
		image  string
	)
	build := &cobra.Command{
		Use:   "build-node-image --rootfs DIR [--image NAME] (component flags)",
		Short: "Assemble kind's node image on a debootstrapped root filesystem and docker import it",
		Long: `build-node-image carries out the node image plan (environment/kind/nodeimage)
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
	f := build.Flags()
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
	_ = build.MarkFlagRequired("rootfs")
	packages := &cobra.Command{
		Use:   "packages",
		Short: "Print the Debian packages of the node image's root filesystem, comma-separated (debootstrap --include)",
		Args:  cobra.NoArgs,
		Run: func(c *cobra.Command, _ []string) {
			fmt.Fprintln(c.OutOrStdout(), strings.Join(nodeimage.Packages, ","))
		},
	}
	cmd.AddCommand(build, packages)
	return cmd
}
