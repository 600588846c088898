package nvmlstate

import (
	"fmt"
	"strings"
)

// RecoveryAction is NVML's nvmlGpuRecoveryAction_t: what the driver asks
// the operator to do (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION).
type RecoveryAction int

// The values of nvmlGpuRecoveryAction_t.
const (
	RecoveryNone            RecoveryAction = 0
	RecoveryGPUReset        RecoveryAction = 1
	RecoveryNodeReboot      RecoveryAction = 2
	RecoveryDrainP2P        RecoveryAction = 3
	RecoveryDrainAndReset   RecoveryAction = 4
	RecoveryRecoverIMEX     RecoveryAction = 5
	RecoveryBusReset        RecoveryAction = 6
	RecoverySystemReboot    RecoveryAction = 7
	maxRecoveryAction                      = RecoverySystemReboot
	recoveryActionNamesDesc                = "none, gpu-reset, node-reboot, drain-p2p, drain-and-reset, recover-imex-domain, bus-reset, system-reboot"
)

var recoveryNames = []string{"none", "gpu-reset", "node-reboot", "drain-p2p", "drain-and-reset",
	"recover-imex-domain", "bus-reset", "system-reboot"}

func (a RecoveryAction) String() string {
	if a >= 0 && a <= maxRecoveryAction {
		return recoveryNames[a]
	}
	return fmt.Sprintf("RecoveryAction(%d)", int(a))
}

// ClocksEventReasons are the bits of nvmlClocksEventReasons (the throttle
// reasons of nvmlDeviceGetCurrentClocksEventReasons), by the names the
// fault CLI takes, in bit order.
var ClocksEventReasons = []struct {
	Name string
	Bit  uint64
}{
	{"gpu-idle", 0x1},
	{"applications-clocks", 0x2},
	{"sw-power-cap", 0x4},
	{"hw-slowdown", 0x8},
	{"sync-boost", 0x10},
	{"sw-thermal", 0x20},
	{"hw-thermal", 0x40},
	{"hw-power-brake", 0x80},
	{"display-clocks", 0x100},
}

// AllClocksEventReasons is every bit ClocksEventReasons names.
const AllClocksEventReasons uint64 = 0x1FF

// ClocksEventReasonNames is "hw-slowdown,sw-thermal" for the bits in r.
func ClocksEventReasonNames(r uint64) string {
	var names []string
	for _, c := range ClocksEventReasons {
		if r&c.Bit != 0 {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ",")
}

// DefaultTemperature is the GPU temperature (°C) of a GPU without a fault
// record.
const DefaultTemperature = 35

// MaxTemperature bounds a fault record's temperature (°C).
const MaxTemperature = 200

// Fault is a "fault" record: the health of one GPU as its kernel driver
// reports it through NVML. A GPU without one is healthy: zero counters,
// recovery action none, no throttling, DefaultTemperature.
type Fault struct {
	GPU int // minor of the gpu record
	// ECC error counts (nvmlDeviceGetTotalEccErrors): volatile since the
	// last driver load or reset, aggregate for the GPU's life.
	SBEVolatile, DBEVolatile, SBEAggregate, DBEAggregate uint64
	// Pages retired because of multiple single-bit errors and of a
	// double-bit error (nvmlDeviceGetRetiredPages); RetiredPending: a page
	// waits for the next reset to be retired.
	RetiredSBE, RetiredDBE int
	RetiredPending         bool
	// Row remapping (nvmlDeviceGetRemappedRows): rows remapped for
	// correctable and uncorrectable errors, a remapping waiting for the
	// next reset, a remapping that failed.
	RemappedCorrectable, RemappedUncorrectable int
	RemapPending, RemapFailure                 bool
	RecoveryAction                             RecoveryAction
	// ClocksEventReasons is a mask of AllClocksEventReasons bits.
	ClocksEventReasons uint64
	Temperature        int // °C, 0..MaxTemperature
	// Lost: the GPU fell off the bus (NVML_ERROR_GPU_IS_LOST).
	Lost bool
}

// Healthy is the fault state of a GPU without a fault record.
func Healthy(minor int) Fault { return Fault{GPU: minor, Temperature: DefaultTemperature} }

// EventType is the type of an event record, one of NVML's event types.
type EventType string

// Event types and the nvmlEventType bit each is delivered as.
const (
	EventXid EventType = "xid" // nvmlEventTypeXidCriticalError (0x8), data = the Xid
	EventSBE EventType = "sbe" // nvmlEventTypeSingleBitEccError (0x1)
	EventDBE EventType = "dbe" // nvmlEventTypeDoubleBitEccError (0x2)
)

// NVMLMask is the nvmlEventType bit of t (0 for an unknown type).
func (t EventType) NVMLMask() uint64 {
	switch t {
	case EventXid:
		return 0x8
	case EventSBE:
		return 0x1
	case EventDBE:
		return 0x2
	}
	return 0
}

// NoInstance is the GI or CI id of an event that is not one of a MIG
// instance (NVML's 0xFFFFFFFF).
const NoInstance uint32 = 0xFFFFFFFF

// MaxEvents is how many event records a file keeps: AppendEvent drops the
// oldest beyond it.
const MaxEvents = 256

// Event is an "event" record: one NVML event of a GPU, as
// nvmlEventSetWait delivers it.
type Event struct {
	Seq  uint64 // 1, 2, ...: increasing in file order, never reused
	Type EventType
	GPU  int    // minor
	GI   uint32 // GPU instance id, or NoInstance
	CI   uint32 // compute instance id, or NoInstance
	Data uint64 // eventData: the Xid for xid events
	Time uint64 // microseconds since the Unix epoch
}

// FaultOf returns the fault state of the GPU with minor minor: its fault
// record, or Healthy(minor).
func (s *State) FaultOf(minor int) Fault {
	for _, f := range s.Faults {
		if f.GPU == minor {
			return f
		}
	}
	return Healthy(minor)
}

// SetFault stores f as its GPU's fault record, in GPU record order; a
// healthy f removes the record.
func (s *State) SetFault(f Fault) {
	var out []Fault
	for _, g := range s.GPUs {
		switch {
		case g.Minor == f.GPU && f != Healthy(f.GPU):
			out = append(out, f)
		case g.Minor != f.GPU:
			for _, o := range s.Faults {
				if o.GPU == g.Minor {
					out = append(out, o)
				}
			}
		}
	}
	s.Faults = out
}

// LastSeq is the sequence number of the newest event, 0 without events.
func (s *State) LastSeq() uint64 {
	if len(s.Events) == 0 {
		return 0
	}
	return s.Events[len(s.Events)-1].Seq
}

// AppendEvent appends e with the next sequence number (set in the returned
// copy) and drops the oldest events beyond MaxEvents.
func (s *State) AppendEvent(e Event) Event {
	e.Seq = s.LastSeq() + 1
	s.Events = append(s.Events, e)
	if n := len(s.Events); n > MaxEvents {
		s.Events = append([]Event(nil), s.Events[n-MaxEvents:]...)
	}
	return e
}

func parseFaultRecord(s *State, kind string, fp *fieldParser) bool {
	switch kind {
	case "fault":
		s.Faults = append(s.Faults, Fault{
			GPU: int(fp.int("gpu")), SBEVolatile: fp.uint("sbeVolatile", 64), DBEVolatile: fp.uint("dbeVolatile", 64),
			SBEAggregate: fp.uint("sbeAggregate", 64), DBEAggregate: fp.uint("dbeAggregate", 64),
			RetiredSBE: int(fp.int("retiredSbe")), RetiredDBE: int(fp.int("retiredDbe")), RetiredPending: fp.flag("retiredPending"),
			RemappedCorrectable: int(fp.int("remappedCor")), RemappedUncorrectable: int(fp.int("remappedUnc")),
			RemapPending: fp.flag("remapPending"), RemapFailure: fp.flag("remapFailure"),
			RecoveryAction: RecoveryAction(fp.int("recoveryAction")), ClocksEventReasons: fp.uint("clocksEventReasons", 64),
			Temperature: int(fp.int("temperature")), Lost: fp.flag("lost"),
		})
	case "event":
		s.Events = append(s.Events, Event{
			Seq: fp.uint("seq", 64), Type: EventType(fp.str("type")), GPU: int(fp.int("gpu")),
			GI: uint32(fp.uint("gi", 32)), CI: uint32(fp.uint("ci", 32)), Data: fp.uint("data", 64), Time: fp.uint("time", 64),
		})
	default:
		return false
	}
	return true
}

func writeFaults(b *strings.Builder, s *State) {
	for _, f := range s.Faults {
		fmt.Fprintf(b, "fault\tgpu=%d\tsbeVolatile=%d\tdbeVolatile=%d\tsbeAggregate=%d\tdbeAggregate=%d"+
			"\tretiredSbe=%d\tretiredDbe=%d\tretiredPending=%d\tremappedCor=%d\tremappedUnc=%d\tremapPending=%d"+
			"\tremapFailure=%d\trecoveryAction=%d\tclocksEventReasons=0x%X\ttemperature=%d\tlost=%d\n",
			f.GPU, f.SBEVolatile, f.DBEVolatile, f.SBEAggregate, f.DBEAggregate, f.RetiredSBE, f.RetiredDBE,
			boolInt(f.RetiredPending), f.RemappedCorrectable, f.RemappedUncorrectable, boolInt(f.RemapPending),
			boolInt(f.RemapFailure), f.RecoveryAction, f.ClocksEventReasons, f.Temperature, boolInt(f.Lost))
	}
	for _, e := range s.Events {
		fmt.Fprintf(b, "event\tseq=%d\ttype=%s\tgpu=%d\tgi=0x%X\tci=0x%X\tdata=%d\ttime=%d\n",
			e.Seq, e.Type, e.GPU, e.GI, e.CI, e.Data, e.Time)
	}
}

// validateFaults checks the fault and event records against each other and
// the gpu records.
func (s *State) validateFaults() error {
	gpus := map[int]bool{}
	for _, g := range s.GPUs {
		gpus[g.Minor] = true
	}
	seen := map[int]bool{}
	for i, f := range s.Faults {
		where := fmt.Sprintf("fault[%d]", i)
		switch {
		case !gpus[f.GPU]:
			return invalid("%s.gpu %d: no gpu record with that minor", where, f.GPU)
		case seen[f.GPU]:
			return invalid("%s.gpu %d: second fault record for the GPU", where, f.GPU)
		case f.SBEAggregate < f.SBEVolatile || f.DBEAggregate < f.DBEVolatile:
			return invalid("%s: an aggregate ECC count is below its volatile count", where)
		case min(f.RetiredSBE, f.RetiredDBE, f.RemappedCorrectable, f.RemappedUncorrectable) < 0 ||
			!fitsInt32(f.RetiredSBE, f.RetiredDBE, f.RemappedCorrectable, f.RemappedUncorrectable):
			return invalid("%s: retired page and remapped row counts must be non-negative", where)
		case f.RecoveryAction < 0 || f.RecoveryAction > maxRecoveryAction:
			return invalid("%s.recoveryAction %d out of range 0..%d (%s)", where, f.RecoveryAction, maxRecoveryAction, recoveryActionNamesDesc)
		case f.ClocksEventReasons&^AllClocksEventReasons != 0:
			return invalid("%s.clocksEventReasons 0x%X has bits outside 0x%X", where, f.ClocksEventReasons, AllClocksEventReasons)
		case f.Temperature < 0 || f.Temperature > MaxTemperature:
			return invalid("%s.temperature %d out of range 0..%d", where, f.Temperature, MaxTemperature)
		}
		seen[f.GPU] = true
	}
	if len(s.Events) > MaxEvents {
		return invalid("%d event records, more than %d", len(s.Events), MaxEvents)
	}
	for i, e := range s.Events {
		where := fmt.Sprintf("event[%d]", i)
		switch {
		case e.Seq == 0 || (i > 0 && e.Seq <= s.Events[i-1].Seq):
			return invalid("%s.seq %d must be positive and above the previous event's", where, e.Seq)
		case e.Type.NVMLMask() == 0:
			return invalid("%s.type %q is not xid, sbe or dbe", where, e.Type)
		case !gpus[e.GPU]:
			return invalid("%s.gpu %d: no gpu record with that minor", where, e.GPU)
		case e.GI != NoInstance && e.GI > MaxGIID, e.CI != NoInstance && (e.CI > MaxCIID || e.GI == NoInstance):
			return invalid("%s: gi %d and ci %d must be ids (0..%d, 0..%d) or 0x%X, a ci only with a gi", where, e.GI, e.CI, MaxGIID, MaxCIID, NoInstance)
		}
	}
	return nil
}
