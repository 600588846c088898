package nvml_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/nvml"
	"drakit.dev/drakit/emulator/nvml/internal/stubgen"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// goNVML locates the go-nvml module of go.mod (the tests run inside it).
func goNVML(t testing.TB) nvml.GoNVMLModule {
	t.Helper()
	m, err := nvml.LocateGoNVML(context.Background(), ".")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// buildProbe compiles testdata/probe.c against go-nvml's nvml.h.
func buildProbe(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "probe")
	cmd := exec.Command("gcc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-DNVML_NO_UNVERSIONED_FUNC_DEFS",
		"-I", goNVML(t).HeaderDir(), "-o", out, filepath.Join("testdata", "probe.c"), "-ldl")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compile probe: %v\n%s", err, b)
	}
	return out
}

type probeResult struct {
	steps          map[string]string // step -> "rc=N[ value]"
	stdout, stderr string
}

// runProbe runs the probe on lib with the shim's environment variables
// cleared and then set from env.
func runProbe(t *testing.T, probe, lib string, env map[string]string, args ...string) probeResult {
	t.Helper()
	cmd := exec.Command(probe, append([]string{lib}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, nvmltest.RootEnv+"=") && !strings.HasPrefix(kv, "DRAKIT_NVML_DEBUG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("probe %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	r := probeResult{steps: map[string]string{}, stdout: stdout.String(), stderr: stderr.String()}
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		step, result, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("probe printed %q, not a step", line)
		}
		if _, dup := r.steps[step]; dup {
			t.Fatalf("probe printed step %s twice", step)
		}
		r.steps[step] = result
	}
	return r
}

func TestCABI(t *testing.T) {
	s := nvmltest.SampleState()
	g0 := s.GPUs[0]
	want := map[string]string{
		"preinit.count":         "rc=1",
		"preinit.handle":        "rc=1",
		"preinit.shutdown":      "rc=1",
		"preinit.driverversion": "rc=1",
		// NVML answers its own and CUDA's version without nvmlInit.
		"preinit.nvmlversion": "rc=0 " + s.System.NVMLVersion,
		"preinit.cudaversion": fmt.Sprintf("rc=0 %d", s.System.CUDADriverVersion),
		"preinit.eventset":    "rc=1",
		"init":                "rc=0", "init.flags": "rc=0", "init.v1": "rc=0",
		"shutdown.1": "rc=0", "shutdown.2": "rc=0",
		"count": "rc=0 3", "count.v1": "rc=0 3", "count.null": "rc=2",
		"handle.oob": "rc=2", "handle.huge": "rc=2", "handle.null": "rc=2",
		"handle.0": "rc=0", "handle.1": "rc=0", "handle.nonnull": "rc=0",

		"name": "rc=0 " + g0.Name, "name.exact": "rc=0 canary=intact", "name.short": "rc=7 canary=intact",
		"name.zero": "rc=7", "name.nullbuf": "rc=2",
		"uuid": "rc=0 " + g0.UUID, "uuid.exact": "rc=0 canary=intact", "uuid.short": "rc=7 canary=intact",
		"uuid.zero": "rc=7", "uuid.nullbuf": "rc=2",
		"driverversion": "rc=0 " + s.System.DriverVersion, "driverversion.short": "rc=7 canary=intact",
		"driverversion.nullbuf": "rc=2",
		"nvmlversion":           "rc=0 " + s.System.NVMLVersion, "nvmlversion.short": "rc=7 canary=intact",
		"nvmlversion.nullbuf": "rc=2",

		"badhandle.null": "rc=2", "badhandle.misaligned": "rc=2", "badhandle.past": "rc=2",
		"badhandle.before": "rc=2", "badhandle.foreign": "rc=2",

		"minor.null": "rc=2", "index.null": "rc=2", "memory.null": "rc=2", "memory_v2.null": "rc=2",
		"pci.null": "rc=2", "pci.v1.null": "rc=2", "arch.null": "rc=2", "brand.null": "rc=2",
		"cc.null": "rc=2", "mig.null": "rc=2", "maxmig.null": "rc=2", "ismig.null": "rc=2",
		"numa.null": "rc=2", "persistence.null": "rc=2", "virtualization.null": "rc=2", "cuda.null": "rc=2",
		"addressing.null": "rc=2", "bustype.null": "rc=2", "computemode.null": "rc=2", "events.supported.null": "rc=2",
		"processes.null": "rc=2", "processes.nullinfos": "rc=2",

		// H100: Hopper, HMM; MIG capable, so MIG configuration changes are an event too.
		"addressing.badversion": "rc=25", "addressing": "rc=0 1",
		"processes.count": "rc=0 0", "processes.mps": "rc=0 count=0 infos=intact", "processes.graphics.v1": "rc=0 0",
		"eventset.create.null": "rc=2", "eventset.create": "rc=0",
		"events.supported": fmt.Sprintf("rc=0 %d", wantEvents(true)),
		"events.register":  "rc=0", "events.register.unsupported": "rc=3", "events.register.baddevice": "rc=2",
		"events.register.badset": "rc=2", "events.wait.nulldata": "rc=2", "events.wait": "rc=10", "events.wait.v1": "rc=10",
		"eventset.free": "rc=0", "eventset.free.again": "rc=2", "events.wait.freed": "rc=2",

		"nvlink.state.null": "rc=2", "nvlink.remotepci.null": "rc=2", "nvlink.state.nolink": "rc=3",
		"fabricv.null": "rc=2", "fabricv.badversion": "rc=25", "fabricv.none": "rc=3",
		"ancestor.null": "rc=2", "p2p.null": "rc=2",
		"memory_v2.badversion": "rc=25",
		"memory_v2": fmt.Sprintf("rc=0 version=%#x total=%d reserved=%d free=%d used=0",
			gonvml.STRUCT_VERSION(gonvml.Memory_v2{}, 2), g0.MemoryTotal, g0.MemoryReserved, g0.MemoryTotal-g0.MemoryReserved),
		// v1 writes only the prefix its struct shares with today's.
		"pci.v1": "rc=0 legacy=0000:1B:00.0 domain=0 bus=27 device=0 tail=intact",
		"pci.v2": "rc=0 busId=" + g0.BusID + " legacy=0000:1B:00.0",

		"uuidlookup.null": "rc=2", "uuidlookup.nulldev": "rc=2", "uuidlookup.malformed": "rc=2",
		"uuidlookup.unknown": "rc=6", "uuidlookup.mig": "rc=6", "uuidlookup.upper": "rc=0 1",
		"buslookup.legacy": "rc=0 1", "buslookup.bus-device-function": "rc=0 1",
		"buslookup.domain-bus-device": "rc=0 1",
		"buslookup.null":              "rc=2", "buslookup.nulldev": "rc=2", "buslookup.malformed": "rc=2",
		"buslookup.trailing": "rc=2", "buslookup.toolong": "rc=2", "buslookup.unknown": "rc=6",

		"shutdown": "rc=0", "shutdown.extra": "rc=1", "post.count": "rc=1", "post.name": "rc=1",
		"post.uuidlookup": "rc=1", "reinit": "rc=0", "reinit.name": "rc=0 " + g0.Name, "reinit.shutdown": "rc=0",
	}
	for _, code := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
		21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 999, 1000, -1} {
		str, ok := canonicalErrorStrings[gonvml.Return(code)]
		if !ok {
			str = "Unknown Error"
		}
		want[fmt.Sprintf("errorstring.%d", code)] = "rc=0 " + str
	}
	r := runProbe(t, buildProbe(t), nvmltest.BuildShim(t), map[string]string{
		nvmltest.RootEnv: nvmltest.NewRoot(t, s),
	}, "abi")
	if diff := cmp.Diff(want, r.steps); diff != "" {
		t.Errorf("probe steps (-want +got):\n%s", diff)
	}
	if r.stderr != "" {
		t.Errorf("probe stderr: %s", r.stderr)
	}
}

// installShim lays the shim out under root as the emulator does: the
// versioned file and the libnvidia-ml.so.1 link to it. It returns the
// directory.
func installShim(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, "usr", "lib", "x86_64-linux-gnu")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(nvmltest.BuildShim(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "libnvidia-ml.so.570.172.08"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("libnvidia-ml.so.570.172.08", filepath.Join(dir, nvml.SONAME)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRootFromLibraryPath(t *testing.T) {
	probe := buildProbe(t)
	root := nvmltest.NewRoot(t, nvmltest.SampleState())
	if err := os.Remove(nvmltest.DeviceNode(root, 1)); err != nil { // this root shows 2 GPUs
		t.Fatal(err)
	}
	dir := installShim(t, root)
	other := nvmltest.NewRoot(t, nvmltest.SampleState()) // shows 3
	elsewhere := filepath.Join(t.TempDir(), "lib")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(nvmltest.BuildShim(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(elsewhere, nvml.SONAME), b, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		lib  string
		env  map[string]string
		want string
	}{
		{"through the .so.1 link", filepath.Join(dir, nvml.SONAME), nil, "init rc=0\ncount rc=0 2\n"},
		{"versioned file", filepath.Join(dir, "libnvidia-ml.so.570.172.08"), nil, "init rc=0\ncount rc=0 2\n"},
		{"empty variable counts as unset", filepath.Join(dir, nvml.SONAME), map[string]string{nvmltest.RootEnv: ""}, "init rc=0\ncount rc=0 2\n"},
		{"variable wins over the path", filepath.Join(dir, nvml.SONAME), map[string]string{nvmltest.RootEnv: other}, "init rc=0\ncount rc=0 3\n"},
	}
	// Outside <root>/usr/lib/x86_64-linux-gnu the root is "/", which on a
	// machine without an installed emulator has no state file.
	if _, err := os.Stat("/run/drakit-emulator/nvml.state"); os.IsNotExist(err) {
		tests = append(tests, struct {
			name string
			lib  string
			env  map[string]string
			want string
		}{"elsewhere: root is /", filepath.Join(elsewhere, nvml.SONAME), nil, "init rc=9\n"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runProbe(t, probe, tt.lib, tt.env, "count")
			if r.stdout != tt.want {
				t.Errorf("probe output %q, want %q", r.stdout, tt.want)
			}
		})
	}
}

func TestDiagnosticsOnlyOnStderrWhenAsked(t *testing.T) {
	probe := buildProbe(t)
	root := nvmltest.NewRoot(t, nvmltest.SampleState())
	nvmltest.WriteStateFile(t, root, []byte(strings.Replace(sampleStateText(t), "ccMajor=9", "ccMajor=nine", 1)))
	quiet := runProbe(t, probe, nvmltest.BuildShim(t), map[string]string{nvmltest.RootEnv: root}, "count")
	if quiet.stdout != "init rc=999\n" || quiet.stderr != "" {
		t.Errorf("without DRAKIT_NVML_DEBUG: stdout %q, stderr %q; want only the probe's line", quiet.stdout, quiet.stderr)
	}
	loud := runProbe(t, probe, nvmltest.BuildShim(t), map[string]string{nvmltest.RootEnv: root, "DRAKIT_NVML_DEBUG": "1"}, "count")
	if loud.stdout != "init rc=999\n" {
		t.Errorf("with DRAKIT_NVML_DEBUG: stdout %q; the shim must not write to stdout", loud.stdout)
	}
	if want := "nvml.state: line 3: field ccMajor=nine is not a 32-bit integer"; !strings.Contains(loud.stderr, want) {
		t.Errorf("with DRAKIT_NVML_DEBUG: stderr %q, want it to contain %q", loud.stderr, want)
	}
	// A file cut short names the line where the end record was due.
	text := sampleStateText(t)
	nvmltest.WriteStateFile(t, root, []byte(strings.TrimSuffix(text, nvmlstate.EndRecord+"\n")))
	loud = runProbe(t, probe, nvmltest.BuildShim(t), map[string]string{nvmltest.RootEnv: root, "DRAKIT_NVML_DEBUG": "1"}, "count")
	want := fmt.Sprintf("nvml.state: line %d: end of file before the end record \"end\": the file is truncated", strings.Count(text, "\n"))
	if loud.stdout != "init rc=999\n" || !strings.Contains(loud.stderr, want) {
		t.Errorf("truncated state with DRAKIT_NVML_DEBUG: stdout %q, stderr %q; want rc=999 and %q", loud.stdout, loud.stderr, want)
	}
}

func TestEveryStubReturnsNotSupported(t *testing.T) {
	header, err := os.ReadFile(filepath.Join(goNVML(t).HeaderDir(), "nvml.h"))
	if err != nil {
		t.Fatal(err)
	}
	funcs, err := stubgen.Parse(header)
	if err != nil {
		t.Fatal(err)
	}
	implemented := map[string]bool{}
	for _, name := range nvml.Implemented {
		implemented[name] = true
	}
	var names []string
	want := map[string]string{"init": "rc=0"}
	for _, f := range funcs {
		if !implemented[f.Name] {
			names = append(names, f.Name)
			want[f.Name] = "rc=3"
		}
	}
	r := runProbe(t, buildProbe(t), nvmltest.BuildShim(t), map[string]string{
		nvmltest.RootEnv: nvmltest.NewRoot(t, nvmltest.SampleState()),
	}, append([]string{"stubs"}, names...)...)
	if diff := cmp.Diff(want, r.steps); diff != "" {
		t.Errorf("stub results (-want +got):\n%s", diff)
	}
	t.Logf("%d stubs return NVML_ERROR_NOT_SUPPORTED", len(names))
}
