package nvml_test

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/nvml"
	"drakit.dev/drakit/emulator/nvml/internal/stubgen"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
)

func TestGeneratedStubsUpToDate(t *testing.T) {
	m := goNVML(t)
	want, err := stubgen.FromHeaderFile(filepath.Join(m.HeaderDir(), "nvml.h"), stubgen.Source{
		Module: nvml.GoNVMLModulePath, Version: m.Version, Path: nvml.HeaderPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("shim", "nvml_stubs_gen.c"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("shim/nvml_stubs_gen.c is out of date with %s %s; run: go generate ./emulator/nvml", nvml.GoNVMLModulePath, m.Version)
	}
}

func declaredFunctions(t *testing.T) []string {
	t.Helper()
	header, err := os.ReadFile(filepath.Join(goNVML(t).HeaderDir(), "nvml.h"))
	if err != nil {
		t.Fatal(err)
	}
	funcs, err := stubgen.Parse(header)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range funcs {
		names = append(names, f.Name)
	}
	return names
}

func TestExportsEveryDeclaredFunctionAndNothingElse(t *testing.T) {
	out, err := exec.Command("nm", "-D", "--defined-only", nvmltest.BuildShim(t)).Output()
	if err != nil {
		t.Fatalf("nm: %v", err)
	}
	kinds := map[string]string{} // symbol -> nm type letter
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("unexpected nm line %q", line)
		}
		kinds[f[2]] = f[1]
	}
	implemented := map[string]bool{}
	for _, name := range nvml.Implemented {
		implemented[name] = true
	}
	declared := map[string]bool{}
	var problems []string
	for _, name := range declaredFunctions(t) {
		declared[name] = true
		want := "W" // weak stub
		if implemented[name] {
			want = "T" // strong definition overriding it
		}
		if kinds[name] != want {
			problems = append(problems, name+": nm type "+strconv.Quote(kinds[name])+", want "+want)
		}
	}
	for name := range kinds {
		if !declared[name] {
			problems = append(problems, name+": exported but not declared in nvml.h")
		}
	}
	for name := range implemented {
		if !declared[name] {
			problems = append(problems, name+": listed in nvml.Implemented but not declared in nvml.h")
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		t.Errorf("exports:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("%d symbols exported: %d implemented, %d stubs", len(kinds), len(implemented), len(kinds)-len(implemented))
}

func TestLibraryMetadata(t *testing.T) {
	f, err := elf.Open(nvmltest.BuildShim(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	soname, err := f.DynString(elf.DT_SONAME)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"libnvidia-ml.so.1"}, soname); diff != "" {
		t.Errorf("SONAME (-want +got):\n%s", diff)
	}
	needed, err := f.DynString(elf.DT_NEEDED)
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range needed {
		if lib != "libc.so.6" && lib != "libpthread.so.0" {
			t.Errorf("needs %s; the shim must load in any glibc container with nothing but libc", lib)
		}
	}
	// The shim is mounted into driver and workload containers of any age:
	// it must not need glibc symbols newer than 2.17 (RHEL 7).
	imports, err := f.ImportedSymbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range imports {
		v, ok := strings.CutPrefix(s.Version, "GLIBC_2.")
		if !ok {
			continue
		}
		minor, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
		if err != nil || minor > 17 {
			t.Errorf("imports %s@%s; want glibc 2.17 or older", s.Name, s.Version)
		}
	}
}
