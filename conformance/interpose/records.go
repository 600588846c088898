package interpose

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/status"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// Sources of a call.
const (
	// SourceKubelet: a call the interposer served on its endpoint.
	SourceKubelet = "kubelet"
	// SourceDirect: a call of the interposer's own driver client.
	SourceDirect = "direct"
)

// Record is one call as the interposer saw it: what was asked, what the
// driver answered, which faults fired and what the caller got. Each is a
// JSON line of the records file.
type Record struct {
	Seq    int64  `json:"seq"`
	Method string `json:"method"`
	// Service is the gRPC service the caller used ("v1.DRAPlugin", …).
	Service string    `json:"service"`
	Source  string    `json:"source"`
	Start   time.Time `json:"start"`
	// Duration is the call's time at the interposer, faults included;
	// DriverDuration the driver's part (0 when it was not called).
	Duration       time.Duration `json:"duration"`
	DriverDuration time.Duration `json:"driverDuration,omitempty"`
	// DriverEndpoint is the socket of the driver instance the call went to
	// (it changes when a driver with per-pod sockets rolls); "" when the
	// driver was not called.
	DriverEndpoint string `json:"driverEndpoint,omitempty"`
	// Claims are the request's claims with the driver's answer for each.
	Claims []ClaimRecord `json:"claims,omitempty"`
	// DriverCode and DriverMessage are the driver's gRPC status ("" when
	// the driver was not called).
	DriverCode    string `json:"driverCode,omitempty"`
	DriverMessage string `json:"driverMessage,omitempty"`
	// Code and Message are the status the caller got.
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
	// Faults are the rules that fired, by label.
	Faults []string `json:"faults,omitempty"`
	// Dropped says a fault closed the caller's connection (the call was
	// never answered).
	Dropped bool `json:"dropped,omitempty"`
	// Responses counts the messages of a stream (NodeWatchResources).
	Responses int `json:"responses,omitempty"`
}

// ClaimRecord is one claim of a call and the driver's answer for it.
type ClaimRecord struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Answered says the driver's response had an entry for the claim.
	Answered bool           `json:"answered"`
	Devices  []DeviceRecord `json:"devices,omitempty"`
	Error    string         `json:"error,omitempty"`
	// InjectedError replaced the driver's answer for the caller.
	InjectedError string `json:"injectedError,omitempty"`
}

// DeviceRecord is one prepared device.
type DeviceRecord struct {
	Requests     []string `json:"requests,omitempty"`
	Pool         string   `json:"pool"`
	Device       string   `json:"device"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs,omitempty"`
	ShareID      string   `json:"shareID,omitempty"`
}

// CDIDeviceIDs are every CDI device ID of the claim's devices, in order.
func (c ClaimRecord) CDIDeviceIDs() []string {
	var ids []string
	for _, d := range c.Devices {
		ids = append(ids, d.CDIDeviceIDs...)
	}
	return ids
}

// Claim returns the record of the claim with uid.
func (r Record) Claim(uid string) (ClaimRecord, bool) {
	for _, c := range r.Claims {
		if c.UID == uid {
			return c, true
		}
	}
	return ClaimRecord{}, false
}

// OK says the caller got no gRPC error.
func (r Record) OK() bool { return r.Code == "OK" }

// Filter selects records; zero fields select all.
type Filter struct {
	Method   string
	Source   string
	ClaimUID string
	// After selects records with a Seq above it.
	After int64
}

func (f Filter) match(r Record) bool {
	if f.Method != "" && r.Method != f.Method || f.Source != "" && r.Source != f.Source || r.Seq <= f.After {
		return false
	}
	if f.ClaimUID != "" {
		_, ok := r.Claim(f.ClaimUID)
		return ok
	}
	return true
}

// recorder keeps the records in memory and appends each to the records
// file, when there is one; safe for concurrent use.
type recorder struct {
	mu      sync.Mutex
	seq     int64
	records []Record
	file    *os.File
	enc     *json.Encoder
}

func newRecorder(path string) (*recorder, error) {
	r := &recorder{}
	if path == "" {
		return r, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open records file %s: %w", path, err)
	}
	r.file, r.enc = f, json.NewEncoder(f)
	return r, nil
}

// add numbers rec, keeps it and writes it to the file; it returns the
// numbered record.
func (r *recorder) add(rec Record) (Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	rec.Seq = r.seq
	r.records = append(r.records, rec)
	if r.enc != nil {
		if err := r.enc.Encode(rec); err != nil {
			return rec, fmt.Errorf("write record %d to %s: %w", rec.Seq, r.file.Name(), err)
		}
	}
	return rec, nil
}

// query returns the records f selects, oldest first.
func (r *recorder) query(f Filter) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Record{}
	for _, rec := range r.records {
		if f.match(rec) {
			out = append(out, rec)
		}
	}
	return out
}

func (r *recorder) close() error {
	if r.file == nil {
		return nil
	}
	return r.file.Close()
}

// claimRecords lists the request's claims.
func claimRecords(claims []*drapb.Claim) []ClaimRecord {
	out := make([]ClaimRecord, 0, len(claims))
	for _, c := range claims {
		out = append(out, ClaimRecord{Namespace: c.GetNamespace(), Name: c.GetName(), UID: c.GetUid()})
	}
	return out
}

// notePrepared adds the driver's prepare answer to the claims.
func notePrepared(claims []ClaimRecord, resp *drapb.NodePrepareResourcesResponse) {
	for i := range claims {
		answer, ok := resp.GetClaims()[claims[i].UID]
		if !ok {
			continue
		}
		claims[i].Answered = true
		claims[i].Error = answer.GetError()
		for _, d := range answer.GetDevices() {
			claims[i].Devices = append(claims[i].Devices, DeviceRecord{
				Requests: d.GetRequestNames(), Pool: d.GetPoolName(), Device: d.GetDeviceName(),
				CDIDeviceIDs: d.GetCdiDeviceIds(), ShareID: d.GetShareId(),
			})
		}
	}
}

// noteUnprepared adds the driver's unprepare answer to the claims.
func noteUnprepared(claims []ClaimRecord, resp *drapb.NodeUnprepareResourcesResponse) {
	for i := range claims {
		if answer, ok := resp.GetClaims()[claims[i].UID]; ok {
			claims[i].Answered = true
			claims[i].Error = answer.GetError()
		}
	}
}

// codeOf is err's gRPC code and message by name ("OK" for nil).
func codeOf(err error) (string, string) {
	s := status.Convert(err)
	return s.Code().String(), s.Message()
}
