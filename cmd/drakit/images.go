package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/cluster"
	"drakit.dev/drakit/cluster/images"
)

func newImagesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Assemble docker-archive images locally (no registry, no Docker) and import them into the cluster",
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
	bindClusterFlags(importCmd.Flags(), &cfg)
	cmd.AddCommand(importCmd)
	return cmd
}
