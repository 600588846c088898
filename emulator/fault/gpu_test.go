package fault_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/fault"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/internal/nvidiahw"
)

func readState(t *testing.T, root string) *nvmlstate.State {
	t.Helper()
	s, err := nvmlstate.ReadFile(filepath.Join(root, nvmlstate.RelativePath))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestXidEffectTable injects every catalogued Xid into a fresh GPU and
// checks the fault state against the documented table (package doc,
// README "Injecting hardware faults").
func TestXidEffectTable(t *testing.T) {
	h := func(f nvmlstate.Fault) nvmlstate.Fault { f.Temperature = nvmlstate.DefaultTemperature; return f }
	want := map[uint64]nvmlstate.Fault{
		48:  h(nvmlstate.Fault{DBEVolatile: 1, DBEAggregate: 1, RetiredPending: true, RecoveryAction: nvmlstate.RecoveryGPUReset}),
		63:  h(nvmlstate.Fault{RemapPending: true, RecoveryAction: nvmlstate.RecoveryDrainAndReset}),
		64:  h(nvmlstate.Fault{RemapFailure: true, RecoveryAction: nvmlstate.RecoveryGPUReset}),
		74:  h(nvmlstate.Fault{RecoveryAction: nvmlstate.RecoveryDrainP2P}),
		79:  h(nvmlstate.Fault{Lost: true, RecoveryAction: nvmlstate.RecoveryNodeReboot}),
		92:  h(nvmlstate.Fault{SBEVolatile: 10, SBEAggregate: 10, RecoveryAction: nvmlstate.RecoveryDrainAndReset}),
		94:  h(nvmlstate.Fault{RecoveryAction: nvmlstate.RecoveryDrainAndReset}),
		95:  h(nvmlstate.Fault{RecoveryAction: nvmlstate.RecoveryGPUReset}),
		119: h(nvmlstate.Fault{RecoveryAction: nvmlstate.RecoveryGPUReset}),
		120: h(nvmlstate.Fault{RecoveryAction: nvmlstate.RecoveryGPUReset}),
	}
	for _, x := range append(nvidiahw.Xids, nvidiahw.Xid{Code: 4242}) {
		root := nvmltest.NewRoot(t, nvmltest.SampleState())
		res, err := fault.InjectXid(root, "0", fault.XidRequest{Code: x.Code})
		if err != nil {
			t.Fatalf("Xid %d: %v", x.Code, err)
		}
		s := readState(t, root)
		w, ok := want[x.Code]
		if !ok {
			w = h(nvmlstate.Fault{}) // application and unknown Xids: the event only
		}
		if diff := cmp.Diff(w, s.FaultOf(0), cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "GPU" }, cmp.Ignore())); diff != "" {
			t.Errorf("Xid %d (%s) fault state (-want +got):\n%s", x.Code, x.Kind, diff)
		}
		if e := s.Events[0]; e.Type != nvmlstate.EventXid || e.Data != x.Code || e.GI != nvmlstate.NoInstance || res.Event != e {
			t.Errorf("Xid %d: first event %+v, result %+v", x.Code, e, res.Event)
		}
		if res.Known != (x.Code != 4242) {
			t.Errorf("Xid %d: Known = %v", x.Code, res.Known)
		}
		if _, err := os.Stat(nvmltest.DeviceNode(root, 0)); (err == nil) == w.Lost {
			t.Errorf("Xid %d: device node: %v (lost %v)", x.Code, err, w.Lost)
		}
	}
}

func TestRecoveryActionKeepsTheStronger(t *testing.T) {
	root := nvmltest.NewRoot(t, nvmltest.SampleState())
	for _, code := range []uint64{63, 74} { // drain-and-reset, then drain-p2p
		if _, err := fault.InjectXid(root, "GPU-5d8b4c1a-0f3e-4a7b-9c21-3e5f6a7b8c90", fault.XidRequest{Code: code}); err != nil {
			t.Fatal(err)
		}
	}
	if got := readState(t, root).FaultOf(0).RecoveryAction; got != nvmlstate.RecoveryDrainAndReset {
		t.Errorf("recovery action after 63 and 74 = %v, want drain-and-reset", got)
	}
	if err := fault.Reset(root, "00000000:1B:00.0"); err != nil {
		t.Fatal(err)
	}
	s := readState(t, root)
	if f := s.FaultOf(0); f.RecoveryAction != nvmlstate.RecoveryNone || f.RemapPending || f.RemappedUncorrectable != 1 {
		t.Errorf("after reset: %+v, want recovery none and the pending row remapped", f)
	}
	if err := fault.Reset(root, "7"); !errors.Is(err, fault.ErrUnknownDevice) {
		t.Errorf("reset of an unknown minor = %v, want ErrUnknownDevice", err)
	}
}
