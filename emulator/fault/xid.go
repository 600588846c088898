package fault

import (
	"fmt"

	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/internal/nvidiahw"
)

// xidFallenOffTheBus is Xid 79: the GPU fell off the bus.
const xidFallenOffTheBus = 79

// highSBERate is how many single-bit errors Xid 92 (high single-bit ECC
// error rate) adds.
const highSBERate = 10

// Effect is what an Xid does to its GPU besides the Xid event (the table
// in the package documentation).
type Effect struct {
	// DBE and SBE are added to the volatile and aggregate ECC counts, each
	// with its ECC event.
	DBE, SBE uint64
	// RetirePage: a page waits for retirement (applied by Reset).
	RetirePage bool
	// RemapRow: a row waits for remapping (applied by Reset).
	RemapRow bool
	// RemapFailure: a row remapping failed.
	RemapFailure bool
	// Recovery is the recovery action asked for (the stronger of it and
	// the GPU's current one stays).
	Recovery nvmlstate.RecoveryAction
	// Lost: the GPU falls off the bus (Lose).
	Lost bool
}

// XidEffects are the device effects of the catalogue's device Xids
// (nvidiahw.Xids); application Xids and unknown codes have none.
var XidEffects = map[uint64]Effect{
	48:  {DBE: 1, RetirePage: true, Recovery: nvmlstate.RecoveryGPUReset},
	63:  {RemapRow: true, Recovery: nvmlstate.RecoveryDrainAndReset},
	64:  {RemapFailure: true, Recovery: nvmlstate.RecoveryGPUReset},
	74:  {Recovery: nvmlstate.RecoveryDrainP2P},
	79:  {Lost: true, Recovery: nvmlstate.RecoveryNodeReboot},
	92:  {SBE: highSBERate, Recovery: nvmlstate.RecoveryDrainAndReset},
	94:  {Recovery: nvmlstate.RecoveryDrainAndReset},
	95:  {Recovery: nvmlstate.RecoveryGPUReset},
	119: {Recovery: nvmlstate.RecoveryGPUReset},
	120: {Recovery: nvmlstate.RecoveryGPUReset},
}

// severity orders recovery actions from none to the most disruptive.
var severity = map[nvmlstate.RecoveryAction]int{
	nvmlstate.RecoveryNone: 0, nvmlstate.RecoveryDrainP2P: 1, nvmlstate.RecoveryGPUReset: 2,
	nvmlstate.RecoveryDrainAndReset: 3, nvmlstate.RecoveryBusReset: 4, nvmlstate.RecoveryRecoverIMEX: 4,
	nvmlstate.RecoveryNodeReboot: 5, nvmlstate.RecoverySystemReboot: 6,
}

func stronger(a, b nvmlstate.RecoveryAction) nvmlstate.RecoveryAction {
	if severity[b] > severity[a] {
		return b
	}
	return a
}

// XidRequest is one Xid to inject.
type XidRequest struct {
	Code uint64
	// Data is the event's eventData; 0 means Code (what the driver reports).
	Data uint64
}

// XidResult says what InjectXid did.
type XidResult struct {
	Event nvmlstate.Event // the Xid event logged
	// Xid is the catalogue entry; Known is false for a code outside it
	// (injected as an event only: the CLI warns).
	Xid    nvidiahw.Xid
	Known  bool
	Effect Effect // the device effect applied (zero for none)
}

// InjectXid logs an Xid event for target (a GPU, or a MIG device: the
// event carries its GI and CI ids) and applies the Xid's device effect
// (XidEffects) to its GPU; a double-bit error also logs its dbe event
// after the Xid. Xid 79 is Lose (on a MIG device: its GPU falls off).
func InjectXid(root, target string, r XidRequest) (XidResult, error) {
	var res XidResult
	res.Xid, res.Known = nvidiahw.LookupXid(r.Code)
	if res.Known && res.Xid.Kind == nvidiahw.XidDevice {
		res.Effect = XidEffects[r.Code]
	}
	data := r.Data
	if data == 0 {
		data = r.Code
	}
	err := update(root, target, "xid", false, func(s *nvmlstate.State, d device) error {
		e := res.Effect
		if e.Lost {
			if err := lose(root, s, d, data); err != nil {
				return err
			}
			res.Event = s.Events[len(s.Events)-1]
			return nil
		}
		gi, ci := d.ids()
		res.Event = s.AppendEvent(nvmlstate.Event{Type: nvmlstate.EventXid, GPU: d.gpu.Minor, GI: gi, CI: ci, Data: data, Time: now()})
		f := s.FaultOf(d.gpu.Minor)
		f.SBEVolatile += e.SBE
		f.SBEAggregate += e.SBE
		f.DBEVolatile += e.DBE
		f.DBEAggregate += e.DBE
		f.RetiredPending = f.RetiredPending || e.RetirePage
		f.RemapPending = f.RemapPending || e.RemapRow
		f.RemapFailure = f.RemapFailure || e.RemapFailure
		f.RecoveryAction = stronger(f.RecoveryAction, e.Recovery)
		s.SetFault(f)
		if e.SBE > 0 {
			s.AppendEvent(nvmlstate.Event{Type: nvmlstate.EventSBE, GPU: d.gpu.Minor, GI: gi, CI: ci, Data: e.SBE, Time: now()})
		}
		if e.DBE > 0 {
			s.AppendEvent(nvmlstate.Event{Type: nvmlstate.EventDBE, GPU: d.gpu.Minor, GI: gi, CI: ci, Data: e.DBE, Time: now()})
		}
		return nil
	})
	return res, err
}

// DescribeEffect is a one-line account of e, "" for no effect.
func DescribeEffect(e Effect) string {
	var parts []string
	add := func(ok bool, format string, args ...any) {
		if ok {
			parts = append(parts, fmt.Sprintf(format, args...))
		}
	}
	add(e.DBE > 0, "+%d double-bit ECC", e.DBE)
	add(e.SBE > 0, "+%d single-bit ECC", e.SBE)
	add(e.RetirePage, "page retirement pending")
	add(e.RemapRow, "row remapping pending")
	add(e.RemapFailure, "row remapping failure")
	add(e.Lost, "fell off the bus")
	add(e.Recovery != nvmlstate.RecoveryNone, "recovery action %s", e.Recovery)
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += ", "
		}
		out += p
	}
	return out
}
