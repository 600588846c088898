package nic

import (
	"testing"

	"drakit.dev/drakit/emulator/platform"
)

func TestDeriveMAC(t *testing.T) {
	t.Parallel()
	if mac := DeriveMAC("x", platform.Address{Bus: 1}); !macPattern.MatchString(mac) || mac[:3] != "02:" || mac == DeriveMAC("y", platform.Address{Bus: 1}) {
		t.Errorf("DeriveMAC: %s is not a seeded, locally administered unicast address", mac)
	}
}
