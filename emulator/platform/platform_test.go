package platform

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHex(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Hex
		wantErr bool
	}{
		{in: `4318`, want: 0x10de},
		{in: `"0x10de"`, want: 0x10de},
		{in: `"0X10DE"`, want: 0x10de},
		{in: `"24"`, want: 24},
		{in: `"0x"`, wantErr: true},
		{in: `-1`, wantErr: true},
		{in: `1.5`, wantErr: true},
		{in: `"0x100000000"`, wantErr: true},
		{in: `true`, wantErr: true},
	}
	for _, tc := range tests {
		var h Hex
		err := h.UnmarshalJSON([]byte(tc.in))
		if (err != nil) != tc.wantErr || (err == nil && h != tc.want) {
			t.Errorf("UnmarshalJSON(%s) = %s, %v; want %s, error %v", tc.in, h, err, tc.want, tc.wantErr)
		}
	}
	out, err := Hex(0x18).MarshalJSON()
	if err != nil || string(out) != `"0x18"` {
		t.Errorf("MarshalJSON(0x18) = %s, %v", out, err)
	}
}

func TestCPUList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		want     []int
		wantList string
		wantMask string // over 64 CPUs
		wantErr  bool
	}{
		{in: "", want: nil, wantList: "", wantMask: "00000000,00000000"},
		{in: "0-3,8", want: []int{0, 1, 2, 3, 8}, wantList: "0-3,8", wantMask: "00000000,0000010f"},
		{in: "8,0-1,2", want: []int{0, 1, 2, 8}, wantList: "0-2,8", wantMask: "00000000,00000107"},
		{in: "32-33,63", want: []int{32, 33, 63}, wantList: "32-33,63", wantMask: "80000003,00000000"},
		{in: "3-1", wantErr: true},
		{in: "1,1", wantErr: true},
		{in: "0-8192", wantErr: true},
		{in: "01", wantErr: true},
		{in: "a", wantErr: true},
		{in: "1,", wantErr: true},
	}
	for _, tc := range tests {
		got, err := ParseCPUList(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseCPUList(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseCPUList(%q) (-want +got):\n%s", tc.in, diff)
		}
		if s := FormatCPUList(got); s != tc.wantList {
			t.Errorf("FormatCPUList(%v) = %q, want %q", got, s, tc.wantList)
		}
		if s := FormatCPUMask(got, 64); s != tc.wantMask {
			t.Errorf("FormatCPUMask(%v) = %q, want %q", got, s, tc.wantMask)
		}
	}
}
