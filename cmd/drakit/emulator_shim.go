package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/emulator/nvml"
)

// newEmulatorBuildShimCommand is "drakit emulator build-shim": its flags map
// onto nvml.BuildOptions.
func newEmulatorBuildShimCommand() *cobra.Command {
	opts := nvml.DefaultBuildOptions()
	cmd := &cobra.Command{
		Use:   "build-shim -o PATH",
		Short: "Compile the NVML shim (libnvidia-ml.so.1) with a C compiler",
		Long: `build-shim compiles the emulator's NVML library from the sources built into
drakit; only a C compiler (gcc) is needed. The library exports every function
of NVML's C API: the discovery functions answer from the emulator root's NVML
state file, all others return NVML_ERROR_NOT_SUPPORTED. Give the result to
'drakit emulator render --shim'. The output is replaced atomically.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := nvml.BuildShim(c.Context(), opts); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "built %s\n", opts.Output)
			return nil
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", opts.Output, "file to write, e.g. ROOT/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<driverVersion>")
	cmd.Flags().StringVar(&opts.HeaderDir, "nvml-header-dir", opts.HeaderDir, "directory of go-nvml's nvml.h to compile against, which checks the shim's prototypes and struct layouts; empty: the bundled ABI subset")
	cmd.Flags().StringVar(&opts.CC, "cc", opts.CC, "C compiler (gcc or compatible)")
	if err := cmd.MarkFlagRequired("output"); err != nil {
		panic(err) // the flag is defined just above
	}
	return cmd
}
