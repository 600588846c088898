package emulator

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/emulator/nvml"
)

// newEmulatorBuildShimCommand is "drakit emulator build-shim": its flags map
// onto nvml.BuildOptions, once for the library and once for nvidia-smi
// (--nvidia-smi is the second Output).
func newEmulatorBuildShimCommand() *cobra.Command {
	opts := nvml.DefaultBuildOptions()
	var smiOutput string
	cmd := &cobra.Command{
		Use:   "build-shim -o PATH [--nvidia-smi PATH]",
		Short: "Compile the NVML shim (libnvidia-ml.so.1) and the emulator's nvidia-smi with a C compiler",
		Long: `build-shim compiles the emulator's NVML library and its nvidia-smi from the
sources built into drakit; only a C compiler (gcc) and the C library's static
archive (libc.a, for nvidia-smi) are needed. The library exports every
function of NVML's C API: the discovery functions answer from the emulator
root's NVML state file, all others return NVML_ERROR_NOT_SUPPORTED.
nvidia-smi is a static NVML client of the same sources (-L, --version,
--query-gpu, the settings NVIDIA's GPU kubelet plugin makes; nvidia-smi -h
lists them). Give the library to 'drakit emulator render --shim', which
installs nvidia-smi from beside it. Both outputs are replaced atomically.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := nvml.BuildShim(c.Context(), opts); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "built %s\n", opts.Output)
			smi := opts
			smi.Output = smiOutput
			if smi.Output == "" {
				smi.Output = filepath.Join(filepath.Dir(opts.Output), nvml.NvidiaSMIName)
			}
			if err := nvml.BuildNvidiaSMI(c.Context(), smi); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "built %s\n", smi.Output)
			return nil
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", opts.Output, "library to write, e.g. _output/lib/libnvidia-ml.so")
	cmd.Flags().StringVar(&smiOutput, "nvidia-smi", "", "nvidia-smi to write; empty: nvidia-smi in the library's directory, where render --shim looks for it")
	cmd.Flags().StringVar(&opts.HeaderDir, "nvml-header-dir", opts.HeaderDir, "directory of go-nvml's nvml.h to compile against, which checks the shim's prototypes and struct layouts; empty: the bundled ABI subset")
	cmd.Flags().StringVar(&opts.CC, "cc", opts.CC, "C compiler (gcc or compatible)")
	if err := cmd.MarkFlagRequired("output"); err != nil {
		panic(err) // the flag is defined just above
	}
	return cmd
}

// newEmulatorShimFunctionsCommand is "drakit emulator shim-functions": the
// NVML functions the shim implements, read from its sources.
func newEmulatorShimFunctionsCommand() *cobra.Command {
	var markdown bool
	cmd := &cobra.Command{
		Use:   "shim-functions [--markdown]",
		Short: "List the NVML functions the shim implements (all others return NVML_ERROR_NOT_SUPPORTED)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if markdown {
				_, err := fmt.Fprint(c.OutOrStdout(), nvml.ImplementedMarkdown())
				return err
			}
			for _, f := range nvml.ImplementedFunctions() {
				fmt.Fprintf(c.OutOrStdout(), "%s\t%s\n", f.Name, f.File)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the list as the README's Markdown section, grouped by source file")
	return cmd
}
