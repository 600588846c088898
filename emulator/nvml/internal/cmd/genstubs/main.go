// Command genstubs regenerates the NVML shim's weak stubs
// (emulator/nvml/shim/nvml_stubs_gen.c) from the nvml.h of the go-nvml
// version in go.mod. go generate runs it in emulator/nvml.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"drakit.dev/drakit/emulator/nvml"
	"drakit.dev/drakit/emulator/nvml/internal/stubgen"
)

func main() {
	out := flag.String("o", "shim/nvml_stubs_gen.c", "file to write")
	flag.Parse()
	if err := run(context.Background(), *out); err != nil {
		fmt.Fprintln(os.Stderr, "genstubs:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string) error {
	m, err := nvml.LocateGoNVML(ctx, ".")
	if err != nil {
		return err
	}
	code, err := stubgen.FromHeaderFile(filepath.Join(m.HeaderDir(), "nvml.h"), stubgen.Source{
		Module: nvml.GoNVMLModulePath, Version: m.Version, Path: nvml.HeaderPath,
	})
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp")
	if err := os.WriteFile(tmp, code, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}
