package nvml_test

import (
	"context"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/nvml"
)

func TestBuildOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		modify  func(*nvml.BuildOptions)
		wantErr string // substring; "" means valid
	}{
		{"defaults with output", func(o *nvml.BuildOptions) {}, ""},
		{"header dir", func(o *nvml.BuildOptions) { o.HeaderDir = "/some/dir" }, ""},
		{"no output", func(o *nvml.BuildOptions) { o.Output = "" }, "output is empty"},
		{"output is a directory", func(o *nvml.BuildOptions) { o.Output = "/tmp/" }, "names a directory"},
		{"output is ..", func(o *nvml.BuildOptions) { o.Output = "lib/.." }, "names a directory"},
		{"no compiler", func(o *nvml.BuildOptions) { o.CC = "" }, "cc is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := nvml.DefaultBuildOptions()
			o.Output = "/tmp/libnvidia-ml.so.1"
			tt.modify(&o)
			err := o.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, nvml.ErrInvalidOptions) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want ErrInvalidOptions mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// dirEntries lists dir's file names.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestBuildShim(t *testing.T) {
	tests := []struct {
		name      string
		headerDir func(t *testing.T) string
	}{
		{"bundled ABI subset", func(*testing.T) string { return "" }},
		// Compiling against go-nvml's header checks the implemented
		// prototypes and the struct layouts against NVML's own.
		{"against go-nvml's nvml.h", func(t *testing.T) string { return goNVML(t).HeaderDir() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := nvml.DefaultBuildOptions()
			o.Output = filepath.Join(dir, "libnvidia-ml.so.570.172.08")
			o.HeaderDir = tt.headerDir(t)
			// An existing file is replaced.
			if err := os.WriteFile(o.Output, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := nvml.BuildShim(context.Background(), o); err != nil {
				t.Fatalf("BuildShim: %v", err)
			}
			if diff := cmp.Diff([]string{"libnvidia-ml.so.570.172.08"}, dirEntries(t, dir)); diff != "" {
				t.Errorf("output directory (-want +got), no temporary files may remain:\n%s", diff)
			}
			fi, err := os.Stat(o.Output)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o755 {
				t.Errorf("mode %v, want 0755", fi.Mode().Perm())
			}
			f, err := elf.Open(o.Output)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if soname, _ := f.DynString(elf.DT_SONAME); len(soname) != 1 || soname[0] != nvml.SONAME {
				t.Errorf("SONAME %q, want %s", soname, nvml.SONAME)
			}
		})
	}
}

func TestBuildShimErrors(t *testing.T) {
	tests := []struct {
		name    string
		modify  func(o *nvml.BuildOptions, dir string)
		wantErr string
	}{
		{"invalid options", func(o *nvml.BuildOptions, dir string) { o.CC = "" }, "cc is empty"},
		{"compiler missing", func(o *nvml.BuildOptions, dir string) { o.CC = filepath.Join(dir, "no-such-cc") }, "compile NVML shim"},
		{"compiler fails", func(o *nvml.BuildOptions, dir string) { o.CC = "false" }, "compile NVML shim"},
		{"header dir without nvml.h", func(o *nvml.BuildOptions, dir string) { o.HeaderDir = dir }, "header dir"},
		{"output directory missing", func(o *nvml.BuildOptions, dir string) {
			o.Output = filepath.Join(dir, "missing", "libnvidia-ml.so.1")
		}, "build NVML shim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := nvml.DefaultBuildOptions()
			o.Output = filepath.Join(dir, "libnvidia-ml.so.1")
			tt.modify(&o, dir)
			err := nvml.BuildShim(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("BuildShim = %v, want an error mentioning %q", err, tt.wantErr)
			}
			if names := dirEntries(t, dir); len(names) != 0 {
				t.Errorf("failed build left %q behind", names)
			}
		})
	}
}
