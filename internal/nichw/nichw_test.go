package nichw

import "testing"

func TestVFAddress(t *testing.T) {
	t.Parallel()
	pf := Address{Bus: 0x0c}
	tests := []struct {
		offset, stride, i int
		want              string
		ok                bool
	}{
		// ConnectX single-port: offset 1, stride 1: 00.1 … 00.7, 01.0 …
		{1, 1, 0, "0000:0c:00.1", true},
		{1, 1, 6, "0000:0c:00.7", true},
		{1, 1, 7, "0000:0c:01.0", true},
		// E810: offset 8: the first VF is 01.0.
		{8, 1, 0, "0000:0c:01.0", true},
		{8, 1, 127, "0000:0c:10.7", true},
		// The routing id carries into the next bus.
		{1, 1, 255, "0000:0d:00.0", true},
		{2, 2, 3, "0000:0c:01.0", true},
	}
	for _, tc := range tests {
		got, ok := VFAddress(pf, tc.offset, tc.stride, tc.i)
		if ok != tc.ok || (ok && got.String() != tc.want) {
			t.Errorf("VFAddress(%s, %d, %d, %d) = %s, %v; want %s, %v", pf, tc.offset, tc.stride, tc.i, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := VFAddress(Address{Bus: 0xff, Device: 31, Function: 7}, 1, 1, 0); ok {
		t.Error("a routing id past 0xffff is accepted")
	}
}

func TestParseAddress(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0000:0c:00.1", "0001:ff:1f.7"} {
		a, err := ParseAddress(s)
		if err != nil || a.String() != s {
			t.Errorf("ParseAddress(%q) = %v, %v", s, a, err)
		}
	}
	for _, s := range []string{"", "0000:0C:00.1", "0000:0c:00.8", "0000:0c:20.0", "0000:0c:00.1x", "00:0c:00.1", "0000:0c:00"} {
		if _, err := ParseAddress(s); err == nil {
			t.Errorf("ParseAddress(%q) accepted", s)
		}
	}
}

func TestPathName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a    Address
		port string
		want string
	}{
		// Real names: a single-port ConnectX in Ethernet mode on bus 1
		// (enp1s0np0); libvirt's example of a VF at 02:0b.6 (enp2s11f6).
		{Address{Bus: 1}, "p0", "enp1s0np0"},
		{Address{Bus: 2, Device: 11, Function: 6}, "", "enp2s11f6"},
		{Address{Bus: 0x0c, Function: 1}, "", "enp12s0f1"},
		{Address{Domain: 1, Bus: 5}, "p0", "enP1p5s0np0"},
	}
	for _, tc := range tests {
		if got := PathName(tc.a, tc.port); got != tc.want {
			t.Errorf("PathName(%s, %q) = %q, want %q", tc.a, tc.port, got, tc.want)
		}
	}
}

func TestValidInterfaceName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"eth0", "enp12s0np0", "enP65535p255s3", "a"} {
		if msg := ValidInterfaceName(ok); msg != "" {
			t.Errorf("%q: %s", ok, msg)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a:b", "a b", "sixteen-bytes-xx"} {
		if ValidInterfaceName(bad) == "" {
			t.Errorf("%q accepted", bad)
		}
	}
}
