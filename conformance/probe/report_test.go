package probe

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sampleReport() Report {
	return Report{
		Devices: []DeviceNode{
			{Path: "/dev/null", Type: CharDevice, Major: 1, Minor: 3},
			{Path: "/dev/nvidia2", Type: CharDevice, Major: 195, Minor: 2},
		},
		Env: map[string]string{"DRAKIT_DEVICE_GPU_2": "GPU-2222", "PATH": "/usr/bin"},
		NVML: NVML{
			DriverVersion: "550.54.15",
			GPUs:          []GPU{{Index: 0, UUID: "GPU-2222", Name: "H100", Minor: 2, BusID: "00000000:43:00.0", MemoryTotal: 1 << 30}},
		},
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	t.Parallel()
	want := sampleReport()
	line, err := Format(want)
	if err != nil {
		t.Fatalf("Format: %v", err)
	}
	if !strings.HasPrefix(line, Marker+" {") || strings.Contains(line, "\n") {
		t.Fatalf("Format = %q, want one line starting with %q", line, Marker+" {")
	}
	got, err := ParseLogs("starting\n" + line + "\nwaiting for SIGTERM\n")
	if err != nil {
		t.Fatalf("ParseLogs: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestParseLogs(t *testing.T) {
	t.Parallel()
	good, err := Format(sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		log       string
		wantErr   string // substring; empty means success
		wantNoRep bool   // errors.Is(err, ErrNoReport)
	}{
		"report with CRLF line end": {log: good + "\r\n"},
		"empty log":                 {log: "", wantNoRep: true},
		"other output only":         {log: "hello\nworld\n", wantNoRep: true},
		"marker without payload":    {log: "x\n" + Marker + "\n", wantErr: "line 2: " + Marker + " marker without a JSON report"},
		"truncated JSON":            {log: Marker + ` {"devices":[`, wantErr: "line 1: decode report"},
		"not JSON":                  {log: Marker + " devices=3", wantErr: "line 1: decode report"},
		"unknown field":             {log: Marker + ` {"devices":[],"gpus":[]}`, wantErr: `unknown field "gpus"`},
		"trailing data":             {log: Marker + ` {"devices":[]} {}`, wantErr: "trailing data"},
		"bad device type":           {log: Marker + ` {"devices":[{"path":"/dev/x","type":"p","major":1,"minor":2}]}`, wantErr: `devices[0] (/dev/x): type "p"`},
		"device without path":       {log: Marker + ` {"devices":[{"path":"","type":"c","major":1,"minor":2}]}`, wantErr: "devices[0]: empty path"},
		"two reports":               {log: good + "\n" + good + "\n", wantErr: "second " + Marker + " line at line 2 (first at line 1)"},
		"wrong type for major":      {log: Marker + ` {"devices":[{"path":"/dev/x","type":"c","major":"one","minor":2}]}`, wantErr: "line 1: decode report"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseLogs(tc.log)
			switch {
			case tc.wantNoRep:
				if !errors.Is(err, ErrNoReport) {
					t.Errorf("ParseLogs: got %v, want ErrNoReport", err)
				}
			case tc.wantErr == "":
				if err != nil {
					t.Errorf("ParseLogs: %v", err)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParseLogs: got %v, want an error containing %q", err, tc.wantErr)
				}
				if errors.Is(err, ErrNoReport) {
					t.Errorf("ParseLogs: malformed report must not be ErrNoReport: %v", err)
				}
			}
		})
	}
}
