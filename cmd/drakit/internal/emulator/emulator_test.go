package emulator

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

func runEmulator(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestEmulatorProfiles(t *testing.T) {
	out, err := runEmulator(t, "profiles")
	if err != nil {
		t.Fatal(err)
	}
	want := "dgx-a100-mig\t8× NVIDIA A100-SXM4-40GB, 8× ConnectX-6, 2 NUMA nodes, 2 root complexes, driver 570.172.08\n" +
		"dgx-h100\t8× NVIDIA H100 80GB HBM3, 8× ConnectX-7, 2 NUMA nodes, 2 root complexes, driver 570.172.08\n" +
		"gb200-nvl-node\t4× NVIDIA GB200, 2 NUMA nodes, 4 root complexes, driver 570.172.08\n" +
		"gb200-tpu-v5p-node\t4× NVIDIA GB200, 4× TPU v5p (2x2x1), 2 NUMA nodes, 4 root complexes, driver 570.172.08\n" +
		"hgx-h100\t8× NVIDIA H100 80GB HBM3, 2 NUMA nodes, 2 root complexes, driver 570.172.08\n" +
		"mixed-mig\t2× NVIDIA A100-SXM4-40GB, 2× NVIDIA H100 80GB HBM3, 2× NVIDIA H200, 1 NUMA nodes, 1 root complexes, driver 570.172.08\n" +
		"tpu-v5p-host\t4× TPU v5p (2x2x1), 2 NUMA nodes, 2 root complexes, driver 570.172.08\n"
	if out != want {
		t.Errorf("profiles printed %q, want %q", out, want)
	}
}

func TestEmulatorShowRoundTrips(t *testing.T) {
	out, err := runEmulator(t, "show", "--profile", "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "shown.yaml")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := profile.LoadFile(file)
	if err != nil {
		t.Fatalf("shown profile does not load: %v", err)
	}
	if len(p.Spec.GPUs) != 8 || p.Spec.GPUs[7].UUID == "" {
		t.Errorf("shown profile lost GPUs: %+v", p.Spec.GPUs)
	}
}

func TestEmulatorValidate(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(`apiVersion: emulator.drakit.dev/v1alpha1
kind: NodeProfile
metadata: {name: bad}
spec:
  rootComplexes: [{name: rc0}]
  gpus:
  - {model: H100-80GB-HBM3, minor: 2, pcie: {rootComplex: rc0, bus: 0x05}}
  - {model: H100-80GB-HBM3, minor: 2, pcie: {rootComplex: rc9, bus: 0x06}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runEmulator(t, "validate", "-f", bad)
	if err == nil || !strings.Contains(err.Error(), "2 problem(s)") {
		t.Errorf("validate of an invalid file: err %v", err)
	}
	for _, want := range []string{"spec.gpus[1].minor: Duplicate value: 2", "spec.gpus[1].pcie.rootComplex: Not found"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	good := filepath.Join(dir, "good.yaml")
	shown, err := runEmulator(t, "show", "--profile", "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte(shown), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runEmulator(t, "validate", "-f", good); err != nil || !strings.Contains(out, "valid") {
		t.Errorf("validate of a valid file: %q, %v", out, err)
	}
}

func TestEmulatorRender(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	out, err := runEmulator(t, "render", "--profile", "dgx-h100", "--root", root)
	if err != nil {
		t.Skipf("render needs mknod (root or CAP_MKNOD): %v", err)
	}
	if !strings.Contains(out, "rendered dgx-h100") {
		t.Errorf("render printed %q", out)
	}
	if _, err := os.Lstat(filepath.Join(root, "sys/bus/pci/devices/0000:18:00.0")); err != nil {
		t.Errorf("rendered tree lacks the first GPU: %v", err)
	}
	if _, err := runEmulator(t, "render", "--profile", "nope", "--root", root); err == nil ||
		!strings.Contains(err.Error(), "dgx-h100") {
		t.Errorf("render of an unknown profile: %v (want the list of built-ins)", err)
	}
	if _, err := os.Lstat(filepath.Join(root, render.NvidiaSMIPath)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("render without --shim installed %s: %v", render.NvidiaSMIPath, err)
	}

	// --shim installs nvidia-smi from beside it, as build-shim writes them;
	// --nvidia-smi names another.
	built := t.TempDir()
	shim, smi, other := filepath.Join(built, "libnvidia-ml.so"), filepath.Join(built, "nvidia-smi"), filepath.Join(t.TempDir(), "smi")
	for path, content := range map[string]string{shim: "shim\n", smi: "beside\n", other: "other\n"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--shim", shim}, "beside\n"},
		{[]string{"--shim", shim, "--nvidia-smi", other}, "other\n"},
	} {
		if _, err := runEmulator(t, append([]string{"render", "--profile", "dgx-h100", "--root", root}, tt.args...)...); err != nil {
			t.Fatalf("render %v: %v", tt.args, err)
		}
		if b, err := os.ReadFile(filepath.Join(root, render.NvidiaSMIPath)); err != nil || string(b) != tt.want {
			t.Errorf("render %v: %s is %q, %v; want %q", tt.args, render.NvidiaSMIPath, b, err, tt.want)
		}
	}
	if err := os.Remove(smi); err != nil {
		t.Fatal(err)
	}
	if _, err := runEmulator(t, "render", "--profile", "dgx-h100", "--root", root, "--shim", shim); err == nil ||
		!strings.Contains(err.Error(), "build-shim writes nvidia-smi beside the shim") {
		t.Errorf("render --shim without nvidia-smi beside it: %v, want an error saying build-shim writes it", err)
	}
}
