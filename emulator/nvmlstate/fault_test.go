package nvmlstate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func faultSample() *State {
	s := sample()
	s.Faults = []Fault{{GPU: 3, SBEVolatile: 2, DBEVolatile: 1, SBEAggregate: 5, DBEAggregate: 1, RetiredDBE: 1,
		RetiredPending: true, RemappedCorrectable: 3, RemapPending: true, RecoveryAction: RecoveryDrainAndReset,
		ClocksEventReasons: 0x28, Temperature: 88}}
	s.Events = []Event{
		{Seq: 4, Type: EventXid, GPU: 3, GI: NoInstance, CI: NoInstance, Data: 48, Time: 1},
		{Seq: 5, Type: EventDBE, GPU: 3, GI: 2, CI: NoInstance, Data: 1, Time: 2},
		{Seq: 9, Type: EventSBE, GPU: 3, GI: 2, CI: 7, Data: 4, Time: 3},
	}
	return s
}

func TestFaultRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, faultSample()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"fault\tgpu=3\tsbeVolatile=2\tdbeVolatile=1\tsbeAggregate=5\tdbeAggregate=1\tretiredSbe=0\tretiredDbe=1" +
			"\tretiredPending=1\tremappedCor=3\tremappedUnc=0\tremapPending=1\tremapFailure=0\trecoveryAction=4" +
			"\tclocksEventReasons=0x28\ttemperature=88\tlost=0\n",
		"event\tseq=5\ttype=dbe\tgpu=3\tgi=0x2\tci=0xFFFFFFFF\tdata=1\ttime=2\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("written file lacks %q:\n%s", want, buf.String())
		}
	}
	got, err := Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(faultSample(), got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestValidateFaults(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(s *State)
		want   string
	}{
		{"unknown gpu", func(s *State) { s.Faults[0].GPU = 4 }, "fault[0].gpu 4: no gpu record"},
		{"second record", func(s *State) { s.Faults = append(s.Faults, Healthy(3)) }, "fault[1].gpu 3: second fault record"},
		{"aggregate below volatile", func(s *State) { s.Faults[0].DBEAggregate = 0 }, "aggregate ECC count is below"},
		{"negative count", func(s *State) { s.Faults[0].RemappedUncorrectable = -1 }, "must be non-negative"},
		{"recovery action", func(s *State) { s.Faults[0].RecoveryAction = 8 }, "fault[0].recoveryAction 8 out of range"},
		{"reasons", func(s *State) { s.Faults[0].ClocksEventReasons = 0x400 }, "clocksEventReasons 0x400 has bits outside"},
		{"temperature", func(s *State) { s.Faults[0].Temperature = -1 }, "fault[0].temperature -1"},
		{"seq order", func(s *State) { s.Events[2].Seq = 5 }, "event[2].seq 5 must be positive and above"},
		{"seq zero", func(s *State) { s.Events[0].Seq = 0 }, "event[0].seq 0"},
		{"type", func(s *State) { s.Events[1].Type = "pstate" }, `event[1].type "pstate"`},
		{"event gpu", func(s *State) { s.Events[0].GPU = 0 }, "event[0].gpu 0"},
		{"gi range", func(s *State) { s.Events[1].GI = 15 }, "event[1]: gi 15"},
		{"ci range", func(s *State) { s.Events[2].CI = 8 }, "event[2]: gi 2 and ci 8"},
		{"ci without gi", func(s *State) { s.Events[0].CI = 0 }, "a ci only with a gi"},
		{"too many", func(s *State) {
			for i := 0; i < MaxEvents; i++ {
				s.Events = append(s.Events, Event{Seq: uint64(10 + i), Type: EventXid, GPU: 3, GI: NoInstance, CI: NoInstance})
			}
		}, "more than 256"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := faultSample()
			tt.change(s)
			err := s.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an ErrInvalid containing %q", err, tt.want)
			}
		})
	}
}

func TestFaultHelpers(t *testing.T) {
	s := sample()
	if got := s.FaultOf(3); got != Healthy(3) || got.Temperature != DefaultTemperature {
		t.Errorf("FaultOf without a record = %+v, want Healthy", got)
	}
	f := s.FaultOf(3)
	f.Lost = true
	s.SetFault(f)
	if len(s.Faults) != 1 || !s.FaultOf(3).Lost {
		t.Errorf("SetFault(lost): %+v", s.Faults)
	}
	s.SetFault(Healthy(3))
	if s.Faults != nil {
		t.Errorf("SetFault(healthy) kept a record: %+v", s.Faults)
	}
	for i := 0; i < MaxEvents+5; i++ {
		e := s.AppendEvent(Event{Type: EventXid, GPU: 3, GI: NoInstance, CI: NoInstance, Data: uint64(i)})
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d got seq %d", i, e.Seq)
		}
	}
	if len(s.Events) != MaxEvents || s.Events[0].Seq != 6 || s.LastSeq() != MaxEvents+5 {
		t.Errorf("after %d events: %d kept, oldest seq %d, newest %d", MaxEvents+5, len(s.Events), s.Events[0].Seq, s.LastSeq())
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	if got := ClocksEventReasonNames(0x28); got != "hw-slowdown,sw-thermal" {
		t.Errorf("ClocksEventReasonNames(0x28) = %q", got)
	}
}

// TestUpdateSerialisesWriters: concurrent Updates each see the others'
// changes (flock, reread, rename), so no event is lost and sequence numbers
// stay unique, and each bumps the generation once; an Update whose function
// fails writes and bumps nothing; a root without a state file is
// ErrNoState.
func TestUpdateSerialisesWriters(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, RelativePath)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	const writers, each = 4, 10
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				errs <- Update(root, func(s *State) error {
					s.AppendEvent(Event{Type: EventXid, GPU: 3, GI: NoInstance, CI: NoInstance, Data: 13})
					return nil
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != writers*each || s.LastSeq() != writers*each {
		t.Errorf("%d events, last seq %d; want %d", len(s.Events), s.LastSeq(), writers*each)
	}
	if gen, err := readGeneration(root); err != nil || gen != writers*each {
		t.Errorf("generation after %d Updates = %d, %v; want one bump each", writers*each, gen, err)
	}
	boom := fmt.Errorf("boom")
	if err := Update(root, func(s *State) error { s.Events = nil; return boom }); !errors.Is(err, boom) {
		t.Errorf("Update with a failing function = %v", err)
	}
	if s, _ := ReadFile(path); len(s.Events) != writers*each {
		t.Errorf("a failed Update wrote: %d events", len(s.Events))
	}
	if err := Update(root, func(s *State) error { s.Faults = []Fault{{GPU: 9}}; return nil }); !errors.Is(err, ErrInvalid) {
		t.Errorf("Update to an invalid state = %v, want ErrInvalid", err)
	}
	if gen, _ := readGeneration(root); gen != writers*each {
		t.Errorf("generation after failed Updates = %d, want %d (no bump without a rename)", gen, writers*each)
	}
	if err := Update(t.TempDir(), func(*State) error { return nil }); !errors.Is(err, ErrNoState) {
		t.Errorf("Update of a root without state = %v, want ErrNoState", err)
	}
	if leftovers, _ := filepath.Glob(path + ".tmp.*"); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}
