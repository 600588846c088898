package fault

import (
	"fmt"
	"path/filepath"
	"time"

	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/internal/nvidiahw"
)

// GPUStatus is one GPU's fault state in a Status.
type GPUStatus struct {
	UUID               string `json:"uuid"`
	Minor              int    `json:"minor"`
	BusID              string `json:"busId"`
	SBEVolatile        uint64 `json:"sbeVolatile"`
	DBEVolatile        uint64 `json:"dbeVolatile"`
	SBEAggregate       uint64 `json:"sbeAggregate"`
	DBEAggregate       uint64 `json:"dbeAggregate"`
	RetiredSBE         int    `json:"retiredSbe"`
	RetiredDBE         int    `json:"retiredDbe"`
	RetiredPending     bool   `json:"retiredPending"`
	RemappedCor        int    `json:"remappedCorrectable"`
	RemappedUnc        int    `json:"remappedUncorrectable"`
	RemapPending       bool   `json:"remapPending"`
	RemapFailure       bool   `json:"remapFailure"`
	RecoveryAction     string `json:"recoveryAction"`
	ClocksEventReasons string `json:"clocksEventReasons"`
	Temperature        int    `json:"temperature"`
	Lost               bool   `json:"lost"`
}

// EventStatus is one logged event in a Status.
type EventStatus struct {
	Seq  uint64 `json:"seq"`
	Type string `json:"type"`
	GPU  string `json:"gpu"`            // its UUID
	GI   *int   `json:"gi,omitempty"`   // nil: not a MIG instance's
	CI   *int   `json:"ci,omitempty"`   // nil: not a compute instance's
	Data uint64 `json:"data"`           // eventData (the Xid of an xid event)
	Time string `json:"time"`           // RFC 3339, UTC
	What string `json:"what,omitempty"` // e.g. "Xid 48 (Double Bit ECC Error)"
}

// Status is the fault state of a root: every GPU's and the logged events,
// oldest first.
type Status struct {
	GPUs   []GPUStatus   `json:"gpus"`
	Events []EventStatus `json:"events"`
}

// List reads root's fault state (without the lock: the state file is
// replaced atomically).
func List(root string) (*Status, error) {
	s, err := nvmlstate.ReadFile(filepath.Join(root, filepath.FromSlash(nvmlstate.RelativePath)))
	if err != nil {
		return nil, fmt.Errorf("list faults: %w", err)
	}
	st := &Status{GPUs: []GPUStatus{}, Events: []EventStatus{}}
	uuids := map[int]string{}
	for _, g := range s.GPUs {
		uuids[g.Minor] = g.UUID
		f := s.FaultOf(g.Minor)
		st.GPUs = append(st.GPUs, GPUStatus{
			UUID: g.UUID, Minor: g.Minor, BusID: g.BusID,
			SBEVolatile: f.SBEVolatile, DBEVolatile: f.DBEVolatile, SBEAggregate: f.SBEAggregate, DBEAggregate: f.DBEAggregate,
			RetiredSBE: f.RetiredSBE, RetiredDBE: f.RetiredDBE, RetiredPending: f.RetiredPending,
			RemappedCor: f.RemappedCorrectable, RemappedUnc: f.RemappedUncorrectable,
			RemapPending: f.RemapPending, RemapFailure: f.RemapFailure, RecoveryAction: f.RecoveryAction.String(),
			ClocksEventReasons: nvmlstate.ClocksEventReasonNames(f.ClocksEventReasons), Temperature: f.Temperature, Lost: f.Lost,
		})
	}
	for _, e := range s.Events {
		es := EventStatus{Seq: e.Seq, Type: string(e.Type), GPU: uuids[e.GPU], Data: e.Data,
			Time: timeOf(e.Time)}
		if e.GI != nvmlstate.NoInstance {
			gi := int(e.GI)
			es.GI = &gi
		}
		if e.CI != nvmlstate.NoInstance {
			ci := int(e.CI)
			es.CI = &ci
		}
		if e.Type == nvmlstate.EventXid {
			es.What = nvidiahw.DescribeXid(e.Data)
		}
		st.Events = append(st.Events, es)
	}
	return st, nil
}

func timeOf(micros uint64) string {
	return time.UnixMicro(int64(micros)).UTC().Format(time.RFC3339Nano)
}
