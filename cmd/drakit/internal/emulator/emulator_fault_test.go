package emulator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"drakit.dev/drakit/emulator/fault"
	"drakit.dev/drakit/emulator/nvmlstate"
)

func faultStatus(t *testing.T, root string) fault.Status {
	t.Helper()
	out, err := runEmulator(t, "fault", "list", "--root", root, "-o", "json")
	if err != nil {
		t.Fatalf("fault list: %v\n%s", err, out)
	}
	var st fault.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("fault list -o json: %v\n%s", err, out)
	}
	return st
}

func TestEmulatorFault(t *testing.T) {
	root := renderNICRoot(t) // dgx-a100-mig: 8 A100s, MIG devices on some
	s, err := nvmlstate.ReadFile(filepath.Join(root, nvmlstate.RelativePath))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ComputeInstances) == 0 {
		t.Fatal("the profile has no MIG devices")
	}
	gpu0, mig := s.GPUs[0], s.ComputeInstances[0]

	out, err := runEmulator(t, "fault", "xid", "--root", root, "--device", gpu0.UUID, "--code", "48")
	if err != nil || !strings.Contains(out, "Xid 48 (Double Bit ECC Error, device fault): event 1; +1 double-bit ECC, page retirement pending, recovery action gpu-reset") {
		t.Errorf("xid 48: %q, %v", out, err)
	}
	st := faultStatus(t, root)
	if g := st.GPUs[0]; g.DBEVolatile != 1 || g.DBEAggregate != 1 || !g.RetiredPending || g.RecoveryAction != "gpu-reset" {
		t.Errorf("GPU 0 after Xid 48: %+v", g)
	}
	if len(st.Events) != 2 || st.Events[0].Data != 48 || st.Events[1].Type != "dbe" || st.Events[0].GI != nil {
		t.Errorf("events after Xid 48: %+v", st.Events)
	}

	// A MIG device's Xid carries its ids; an application Xid changes nothing.
	if out, err := runEmulator(t, "fault", "xid", "--root", root, "--device", mig.UUID, "--code", "13"); err != nil || !strings.Contains(out, "no device effect") {
		t.Errorf("xid 13 on a MIG device: %q, %v", out, err)
	}
	st = faultStatus(t, root)
	if e := st.Events[2]; e.GI == nil || *e.GI != mig.GI || e.CI == nil || *e.CI != mig.ID || e.What != "Xid 13 (Graphics Engine Exception)" {
		t.Errorf("MIG Xid event: %+v", e)
	}
	// An unknown Xid is logged with a warning.
	if out, err := runEmulator(t, "fault", "xid", "--root", root, "--device", "1", "--code", "4242"); err != nil || !strings.Contains(out, "warning: Xid 4242 is not in the catalogue") {
		t.Errorf("unknown Xid: %q, %v", out, err)
	}
	if out, err := runEmulator(t, "fault", "throttle", "--root", root, "--device", gpu0.BusID, "--reasons", "hw-slowdown,sw-thermal", "--temperature", "93"); err != nil {
		t.Errorf("throttle: %q, %v", out, err)
	}
	if out, err := runEmulator(t, "fault", "lose", "--root", root, "--device", strings.ToLower(gpu0.BusID[4:])); err != nil {
		t.Errorf("lose by sysfs bus id: %q, %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(root, "dev/nvidia0")); !os.IsNotExist(err) {
		t.Errorf("/dev/nvidia0 after lose: %v", err)
	}
	text, err := runEmulator(t, "fault", "list", "--root", root)
	var row []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, gpu0.UUID) {
			row = strings.Fields(line)
		}
	}
	if want := []string{gpu0.UUID, "0", gpu0.BusID, "yes", "node-reboot", "0/0", "1/1", "0/0/yes", "0/0/no/no", "hw-slowdown,sw-thermal", "93"}; err != nil || strings.Join(row, " ") != strings.Join(want, " ") {
		t.Errorf("fault list: GPU 0 row %q, want %q (%v):\n%s", row, want, err, text)
	}
	if !strings.Contains(text, "Xid 79 (GPU has fallen off the bus)") {
		t.Errorf("fault list shows no Xid 79 event:\n%s", text)
	}
	if out, err := runEmulator(t, "fault", "lose-mig", "--root", root, "--uuid", mig.UUID); err != nil {
		t.Errorf("lose-mig: %q, %v", out, err)
	}
	after, _ := nvmlstate.ReadFile(filepath.Join(root, nvmlstate.RelativePath))
	if len(after.ComputeInstances) != len(s.ComputeInstances)-1 {
		t.Errorf("lose-mig left %d compute instances of %d", len(after.ComputeInstances), len(s.ComputeInstances))
	}
	if _, err := os.Stat(filepath.Join(root, "dev/nvidia-caps", "nvidia-cap"+strconv.Itoa(mig.CapMinor))); !os.IsNotExist(err) {
		t.Errorf("the lost MIG device's capability node: %v", err)
	}

	// The root from the environment, as a declaration's faultCommand runs
	// it: the kit sets $DRAKIT_EMULATOR_ROOT.
	t.Setenv("DRAKIT_EMULATOR_ROOT", root)
	if out, err := runEmulator(t, "fault", "reset", "--device", gpu0.UUID); err != nil {
		t.Errorf("reset: %q, %v", out, err)
	}
	st = faultStatus(t, root)
	if g := st.GPUs[0]; g.Lost || g.DBEVolatile != 0 || g.DBEAggregate != 1 || g.RetiredDBE != 1 || g.RetiredPending ||
		g.RecoveryAction != "none" || g.ClocksEventReasons != "" || g.Temperature != nvmlstate.DefaultTemperature {
		t.Errorf("GPU 0 after reset: %+v", g)
	}
	if _, err := os.Stat(filepath.Join(root, "dev/nvidia0")); err != nil {
		t.Errorf("/dev/nvidia0 after reset: %v", err)
	}
}

func TestEmulatorFaultErrors(t *testing.T) {
	t.Setenv("DRAKIT_EMULATOR_ROOT", "") // --root is required without it
	root := renderNICRoot(t)
	s, err := nvmlstate.ReadFile(filepath.Join(root, nvmlstate.RelativePath))
	if err != nil {
		t.Fatal(err)
	}
	mig := s.ComputeInstances[0].UUID
	if _, err := runEmulator(t, "fault", "lose", "--root", root, "--device", "3"); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"xid", "--device", "0", "--code", "48"}, "--root: required"},
		{[]string{"xid", "--root", root, "--code", "48"}, "--device: required"},
		{[]string{"xid", "--root", root, "--device", "0"}, "--code: required"},
		{[]string{"xid", "--root", empty, "--device", "0", "--code", "48"}, "no NVML state file"},
		{[]string{"xid", "--root", root, "--device", "GPU-00000000-0000-0000-0000-000000000000", "--code", "48"},
			"device GPU-00000000-0000-0000-0000-000000000000: no such GPU or MIG device (the root has GPU-"},
		{[]string{"xid", "--root", root, "--device", "MIG-00000000-0000-0000-0000-000000000000", "--code", "48"}, "no such GPU or MIG device"},
		{[]string{"xid", "--root", root, "--device", "0000:ff:00.0", "--code", "48"}, "no such GPU or MIG device"},
		{[]string{"xid", "--root", root, "--device", "gpu0", "--code", "48"}, `target "gpu0" is none of`},
		{[]string{"xid", "--root", root, "--device", "3", "--code", "48"}, "the GPU is lost: it fell off the bus (reset it first)"},
		{[]string{"lose", "--root", root, "--device", "3"}, "lose 3: GPU GPU-"},
		{[]string{"lose", "--root", root, "--device", mig}, "wrong kind of device: lose takes a GPU (use lose-mig"},
		{[]string{"reset", "--root", root, "--device", mig}, "a reset is a whole GPU's"},
		{[]string{"throttle", "--root", root, "--device", mig, "--reasons", "hw-slowdown"}, "throttling is a whole GPU's"},
		{[]string{"throttle", "--root", root, "--device", "0", "--reasons", "hot"}, `--reasons: invalid fault: reasons: unknown clocks event reason "hot"`},
		{[]string{"throttle", "--root", root, "--device", "0", "--reasons", "none", "--temperature", "500"}, "--temperature 500: must be 0..200"},
		{[]string{"throttle", "--root", root, "--device", "0"}, "--reasons: required"},
		{[]string{"ecc", "--root", root, "--device", "0"}, "--single or --double"},
		{[]string{"lose-mig", "--root", root, "--uuid", s.GPUs[0].UUID}, "--uuid \"GPU-"},
		{[]string{"lose-mig", "--root", root, "--uuid", "MIG-00000000-0000-0000-0000-000000000000"}, "no such GPU or MIG device"},
		{[]string{"list", "--root", root, "-o", "yaml"}, `-o "yaml": must be text or json`},
		{[]string{"list", "--root", empty}, "read NVML state"},
	} {
		out, err := runEmulator(t, append([]string{"fault"}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("fault %s: %v (output %q), want an error containing %q", strings.Join(tt.args, " "), err, out, tt.want)
		}
	}
	// A second lose names the lost GPU.
	if _, err := runEmulator(t, "fault", "lose", "--root", root, "--device", "3"); err == nil || !strings.Contains(err.Error(), "the GPU is lost") {
		t.Errorf("second lose: %v", err)
	}
}
