package nvidiahw

import (
	"slices"
	"testing"
)

func TestXidsSortedAndUnique(t *testing.T) {
	for i := 1; i < len(Xids); i++ {
		if Xids[i-1].Code >= Xids[i].Code {
			t.Errorf("Xids[%d] = %d after %d: the catalogue must be in ascending code order without repeats", i, Xids[i].Code, Xids[i-1].Code)
		}
	}
}

// The application Xids are the ones NVIDIA's device plugin and DRA driver
// skip by default; every other catalogued Xid blames the device.
func TestApplicationXidsAreNVIDIAs(t *testing.T) {
	var app []uint64
	for _, x := range Xids {
		if x.Kind == XidApplication {
			app = append(app, x.Code)
		} else if x.Kind != XidDevice {
			t.Errorf("Xid %d: kind %q, want %q or %q", x.Code, x.Kind, XidApplication, XidDevice)
		}
	}
	if want := []uint64{13, 31, 43, 45, 68, 109}; !slices.Equal(app, want) {
		t.Errorf("application Xids %v, want NVIDIA's %v", app, want)
	}
}

func TestLookupXid(t *testing.T) {
	for _, tc := range []struct {
		code uint64
		ok   bool
		kind XidKind
		desc string
	}{
		{48, true, XidDevice, "Xid 48 (Double Bit ECC Error)"},
		{79, true, XidDevice, "Xid 79 (GPU has fallen off the bus)"},
		{13, true, XidApplication, "Xid 13 (Graphics Engine Exception)"},
		{200, false, "", "Xid 200"},
		{0, false, "", "Xid 0"},
	} {
		x, ok := LookupXid(tc.code)
		if ok != tc.ok || x.Kind != tc.kind {
			t.Errorf("LookupXid(%d) = %+v, %v; want kind %q, %v", tc.code, x, ok, tc.kind, tc.ok)
		}
		if got := DescribeXid(tc.code); got != tc.desc {
			t.Errorf("DescribeXid(%d) = %q, want %q", tc.code, got, tc.desc)
		}
	}
}
