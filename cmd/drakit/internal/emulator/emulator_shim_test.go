package emulator

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"drakit.dev/drakit/emulator/nvml"
)

var updateREADME = flag.Bool("update", false, "rewrite the README's generated list of NVML functions")

const (
	shimFunctionsBegin = "<!-- BEGIN shim-functions"
	shimFunctionsEnd   = "<!-- END shim-functions -->"
)

// TestREADMEListsShimFunctions fails when the README's marked list of the
// NVML functions the shim implements differs from what the shim's sources
// define (drakit emulator shim-functions --markdown); -update rewrites it.
func TestREADMEListsShimFunctions(t *testing.T) {
	path := filepath.Join("..", "..", "..", "..", "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	begin := strings.Index(readme, shimFunctionsBegin)
	end := strings.Index(readme, shimFunctionsEnd)
	if begin < 0 || end < begin {
		t.Fatalf("README.md lacks the section between %q and %q", shimFunctionsBegin, shimFunctionsEnd)
	}
	start := begin + strings.Index(readme[begin:], "\n") + 1
	want, err := runEmulator(t, "shim-functions", "--markdown")
	if err != nil {
		t.Fatal(err)
	}
	if readme[start:end] == want {
		return
	}
	if *updateREADME {
		if err := os.WriteFile(path, []byte(readme[:start]+want+readme[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's list of NVML functions is out of date with the shim's sources; "+
		"run: go test ./cmd/drakit/internal/emulator -run TestREADMEListsShimFunctions -update\nwant:\n%s", want)
}

func TestShimFunctionsCommand(t *testing.T) {
	out, err := runEmulator(t, "shim-functions")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(nvml.Implemented) {
		t.Errorf("shim-functions printed %d lines, want %d", len(lines), len(nvml.Implemented))
	}
	for _, want := range []string{"nvmlInit_v2\tshim.c", "nvmlDeviceGetAddressingMode\tdevice.c", "nvmlEventSetWait_v2\tevents.c", "nvmlDeviceCreateGpuInstance\tmig_create.c"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("shim-functions output lacks %q", want)
		}
	}
}

// TestBuildShimWritesNvidiaSMI checks that build-shim writes nvidia-smi
// beside the library, where render --shim finds it, or at --nvidia-smi.
func TestBuildShimWritesNvidiaSMI(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libnvidia-ml.so")
	out, err := runEmulator(t, "build-shim", "-o", lib)
	if err != nil {
		t.Fatalf("build-shim: %v\n%s", err, out)
	}
	smi := filepath.Join(dir, nvml.NvidiaSMIName)
	if want := "built " + lib + "\nbuilt " + smi + "\n"; out != want {
		t.Errorf("build-shim printed %q, want %q", out, want)
	}
	for _, path := range []string{lib, smi} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v, %v", path, fi, err)
		}
	}
	other := filepath.Join(t.TempDir(), "smi")
	if out, err := runEmulator(t, "build-shim", "-o", lib, "--nvidia-smi", other); err != nil || !strings.HasSuffix(out, "built "+other+"\n") {
		t.Errorf("build-shim --nvidia-smi %s: %q, %v", other, out, err)
	}
}
