package nvml_test

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/nvml"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// smiResult is what one nvidia-smi run printed and its exit code.
type smiResult struct {
	stdout, stderr string
	code           int
}

func (r smiResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runSMI runs the nvidia-smi at path with args, in this process's
// environment without $DRAKIT_EMULATOR_ROOT and $DRAKIT_NVML_DEBUG, plus env
// ("K=V"); attr, when set, is the process's (a chroot).
func runSMI(t *testing.T, path string, attr *syscall.SysProcAttr, env []string, args ...string) smiResult {
	t.Helper()
	cmd := exec.Command(path, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, nvmltest.RootEnv+"=") && !strings.HasPrefix(kv, "DRAKIT_NVML_DEBUG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = attr
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := smiResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run nvidia-smi %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// installSMI copies the built nvidia-smi to root/usr/bin/nvidia-smi, where
// render installs it, and returns that path.
func installSMI(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(nvmltest.BuildNvidiaSMI(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "usr", "bin", nvml.NvidiaSMIName) // where render installs it
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBuildNvidiaSMI(t *testing.T) {
	for _, tt := range []struct {
		name      string
		headerDir func(t *testing.T) string
	}{
		{"bundled ABI subset", func(*testing.T) string { return "" }},
		// Against go-nvml's header, every NVML call nvidia-smi makes is
		// checked against NVML's prototype.
		{"against go-nvml's nvml.h", func(t *testing.T) string { return goNVML(t).HeaderDir() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := nvml.DefaultBuildOptions()
			o.Output = filepath.Join(dir, nvml.NvidiaSMIName)
			o.HeaderDir = tt.headerDir(t)
			if err := nvml.BuildNvidiaSMI(context.Background(), o); err != nil {
				t.Fatalf("BuildNvidiaSMI: %v", err)
			}
			if diff := cmp.Diff([]string{nvml.NvidiaSMIName}, dirEntries(t, dir)); diff != "" {
				t.Errorf("output directory (-want +got), no temporary files may remain:\n%s", diff)
			}
			if fi, err := os.Stat(o.Output); err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("output %v, %v; want mode 0755", fi, err)
			}
			// Static: no interpreter, no shared library, so it runs in a
			// chroot into an emulator root and in any container.
			f, err := elf.Open(o.Output)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
					t.Errorf("nvidia-smi has a %v program header: not a static executable", p.Type)
				}
			}
			if r := runSMI(t, o.Output, nil, []string{nvmltest.RootEnv + "=" + t.TempDir()}, "-h"); r.code != 0 ||
				!strings.Contains(r.stdout, "drakit emulator") {
				t.Errorf("nvidia-smi -h: %v", r)
			}
		})
	}
	o := nvml.DefaultBuildOptions()
	o.Output = filepath.Join(t.TempDir(), nvml.NvidiaSMIName)
	o.CC = "false"
	if err := nvml.BuildNvidiaSMI(context.Background(), o); err == nil || !strings.Contains(err.Error(), "compile nvidia-smi") {
		t.Errorf("BuildNvidiaSMI with a failing compiler = %v, want an error naming nvidia-smi", err)
	}
}

// TestNvidiaSMIAnswersTheGPUKubeletPlugin runs nvidia-smi as NVIDIA's GPU
// kubelet plugin does (k8s-dra-driver-gpu, cmd/gpu-kubelet-plugin/nvlib.go:
// setComputeMode, setTimeSlice with LD_PRELOAD naming the driver root's
// NVML, disableGPUPersistenceMode) and as operators do.
func TestNvidiaSMIAnswersTheGPUKubeletPlugin(t *testing.T) {
	s := nvmltest.MIGSampleState()
	root := nvmltest.NewMIGRoot(t, s)
	lib := filepath.Join(installShim(t, root), "libnvidia-ml.so.570.172.08")
	smi := installSMI(t, root)
	preload := []string{"LD_PRELOAD=" + lib}
	gpu0, l4, mig := s.GPUs[0].UUID, s.GPUs[2].UUID, s.ComputeInstances[0].UUID
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string // in stdout
	}{
		{"time slicing: compute mode DEFAULT", []string{"-i", gpu0, "-c", "DEFAULT"}, 0,
			"Compute mode is already set to DEFAULT for GPU 00000000:1B:00.0.\nAll done.\n"},
		{"compute mode by number", []string{"-i", l4, "-c", "0"}, 0,
			"Compute mode is already set to DEFAULT for GPU 00000001:C1:1F.7.\nAll done.\n"},
		{"MPS: compute mode EXCLUSIVE_PROCESS", []string{"-i", gpu0, "-c", "EXCLUSIVE_PROCESS"}, 3,
			"Unable to set the compute mode to EXCLUSIVE_PROCESS for GPU 00000000:1B:00.0: Not Supported\n"},
		{"default time slice", []string{"compute-policy", "-i", gpu0, "--set-timeslice", "0"}, 0,
			"Time slice is already Default (0) for GPU 00000000:1B:00.0.\nAll done.\n"},
		{"long time slice", []string{"compute-policy", "-i", gpu0, "--set-timeslice=3"}, 3,
			"Unable to set the time slice to Long (3) for GPU 00000000:1B:00.0: Not Supported\n"},
		{"passthrough: persistence off, nvpci's address form", []string{"-i", "0000:1b:00.0", "-pm", "0"}, 0,
			"Persistence mode is already Disabled for GPU 00000000:1B:00.0.\nAll done.\n"},
		{"persistence on", []string{"-i", "0000:1b:00.0", "-pm", "1"}, 3,
			"Unable to set persistence mode to Enabled for GPU 00000000:1B:00.0: Not Supported\n"},
		{"every GPU", []string{"-c", "DEFAULT"}, 0, "for GPU 00000000:43:00.0.\n"},
		{"a MIG device has no compute mode", []string{"-i", mig, "-c", "DEFAULT"}, 3, "for MIG device " + mig + ": Not Supported\n"},
		{"unknown GPU", []string{"-i", "GPU-00000000-0000-4000-8000-000000000000", "-c", "DEFAULT"}, 6, "No devices were found"},
		{"index out of range", []string{"-i", "3", "-L"}, 6, "No devices were found"},
		{"invalid id", []string{"-i", "first", "-L"}, 2, ""},
		{"invalid compute mode", []string{"-c", "7"}, 2, ""},
		{"invalid time slice", []string{"compute-policy", "--set-timeslice", "4"}, 2, ""},
		{"option not emulated", []string{"-q"}, 2, ""},
		{"value missing", []string{"-i"}, 2, ""},
		{"list", []string{"-L"}, 0, nvmltest.NvidiaSMIList(s)},
		{"list one GPU by bus id", []string{"-L", "-i", "00000001:C1:1F.7"}, 0, "GPU 2: NVIDIA L4 (UUID: " + l4 + ")\n"},
		{"version", []string{"--version"}, 0,
			"NVIDIA-SMI version  : 570.172.08\nNVML version        : 12.570.172.08\nDRIVER version      : 570.172.08\nCUDA Version        : 12.8\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runSMI(t, smi, nil, preload, tt.args...)
			if r.code != tt.wantCode || !strings.Contains(r.stdout, tt.want) {
				t.Errorf("nvidia-smi %s: %v\nwant exit %d and stdout containing %q", strings.Join(tt.args, " "), r, tt.wantCode, tt.want)
			}
		})
	}
	if r := runSMI(t, smi, nil, nil, "-L"); r.stdout != nvmltest.NvidiaSMIList(s) || r.code != 0 {
		t.Errorf("nvidia-smi -L lists (-want +got):\n%s%v", cmp.Diff(nvmltest.NvidiaSMIList(s), r.stdout), r)
	}
}

func TestNvidiaSMIQueryAndTable(t *testing.T) {
	s := nvmltest.MIGSampleState()
	smi := installSMI(t, nvmltest.NewMIGRoot(t, s))
	r := runSMI(t, smi, nil, nil, "--query-gpu=index,name,uuid,pci.bus_id,memory.total,memory.used,compute_cap,mig.mode.current,compute_mode,persistence_mode,count",
		"--format=csv")
	want := "index, name, uuid, pci.bus_id, memory.total [MiB], memory.used [MiB], compute_cap, mig.mode.current, compute_mode, persistence_mode, count\n"
	for i, g := range s.GPUs {
		mig := "[N/A]"
		if g.MIGCapable {
			mig = map[int]string{0: "Disabled", 1: "Enabled"}[g.MIGMode]
		}
		// NVML's v2 memory info: nothing is allocated on an emulated GPU.
		want += fmt.Sprintf("%d, %s, %s, %s, %d MiB, 0 MiB, %d.%d, %s, Default, Disabled, 3\n",
			i, g.Name, g.UUID, g.BusID, g.MemoryTotal>>20, g.CCMajor, g.CCMinor, mig)
	}
	if r.code != 0 || r.stdout != want {
		t.Errorf("--query-gpu (-want +got):\n%s%v", cmp.Diff(want, r.stdout), r)
	}
	r = runSMI(t, smi, nil, nil, "--query-gpu=uuid,memory.free", "--format=csv,noheader,nounits", "-i", "1")
	if want := fmt.Sprintf("%s, %d\n", s.GPUs[1].UUID, (s.GPUs[1].MemoryTotal-s.GPUs[1].MemoryReserved)>>20); r.code != 0 || r.stdout != want {
		t.Errorf("--query-gpu one GPU, noheader, nounits: %v\nwant %q", r, want)
	}
	for _, args := range [][]string{
		{"--query-gpu=temperature.gpu", "--format=csv"},
		{"--query-gpu=uuid"},
		{"--query-gpu=uuid", "--format=json"},
	} {
		if r := runSMI(t, smi, nil, nil, args...); r.code != 2 {
			t.Errorf("nvidia-smi %s: %v; want exit 2", strings.Join(args, " "), r)
		}
	}
	r = runSMI(t, smi, nil, nil)
	for _, want := range []string{
		"| NVIDIA-SMI 570.172.08             Driver Version: 570.172.08     CUDA Version: 12.8     |\n",
		"|   0  NVIDIA H100 80GB HBM3          Off |  00000000:1B:00.0  N/A |                  N/A |\n",
		"|   2  NVIDIA L4                      Off |  00000001:C1:1F.7  N/A |                  N/A |\n",
		"|                                         |                        |              Enabled |\n",
		"|                                         |                        |                  N/A |\n",
		"|  No running processes found                                                             |\n",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("nvidia-smi: %v\nwant a line %q", r, want)
		}
	}
}

// TestNvidiaSMIRoot checks where nvidia-smi finds the node: from its own
// path, from $DRAKIT_EMULATOR_ROOT, from "/" in a chroot into the root (the
// plugin's "chroot <dev root> nvidia-smi"), and that it sees the GPUs whose
// device nodes exist, as the shim does.
func TestNvidiaSMIRoot(t *testing.T) {
	s := nvmltest.SampleState()
	root := nvmltest.NewRoot(t, s)
	smi := installSMI(t, root)
	elsewhere := installSMI(t, filepath.Join(t.TempDir(), "opt"))
	if r := runSMI(t, elsewhere, nil, []string{nvmltest.RootEnv + "=" + root}, "-L"); r.code != 0 || r.stdout != nvmltest.NvidiaSMIList(s) {
		t.Errorf("with %s set: %v", nvmltest.RootEnv, r)
	}
	if _, err := os.Stat("/run/drakit-emulator/nvml.state"); errors.Is(err, os.ErrNotExist) {
		// Not below a root's usr/bin: the root is /, which has no state here.
		lost := filepath.Join(t.TempDir(), "nvidia-smi")
		if err := os.Link(elsewhere, lost); err != nil {
			t.Fatal(err)
		}
		if r := runSMI(t, lost, nil, nil, "-L"); r.code != 9 || !strings.Contains(r.stdout, "couldn't communicate with the NVIDIA driver") ||
			!strings.Contains(r.stderr, "emulator root /") {
			t.Errorf("outside a root: %v", r)
		}
	}
	if err := os.Remove(nvmltest.DeviceNode(root, 1)); err != nil {
		t.Fatal(err)
	}
	visible := &nvmlstate.State{System: s.System, GPUs: []nvmlstate.GPU{s.GPUs[0], s.GPUs[2]}}
	if r := runSMI(t, smi, nil, nil, "-L"); r.code != 0 || r.stdout != nvmltest.NvidiaSMIList(visible) {
		t.Errorf("without /dev/nvidia1 (-want +got):\n%s%v", cmp.Diff(nvmltest.NvidiaSMIList(visible), r.stdout), r)
	}
	t.Run("chroot", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("chroot needs root")
		}
		// No /proc and no C library in the root: nvidia-smi's root is "/",
		// the chroot's.
		r := runSMI(t, "/usr/bin/nvidia-smi", &syscall.SysProcAttr{Chroot: root}, nil, "-i", "0000:1b:00.0", "-pm", "0")
		if want := "Persistence mode is already Disabled for GPU 00000000:1B:00.0.\nAll done.\n"; r.code != 0 || r.stdout != want {
			t.Errorf("chroot %s nvidia-smi -i 0000:1b:00.0 -pm 0: %v\nwant %q", root, r, want)
		}
	})
}
