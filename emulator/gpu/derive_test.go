package gpu

import (
	"testing"

	"drakit.dev/drakit/emulator/platform"
)

func TestDeriveUUID(t *testing.T) {
	t.Parallel()
	if DeriveUUID("x", platform.Address{Bus: 1}) == DeriveUUID("y", platform.Address{Bus: 1}) {
		t.Error("the seed does not change the UUID")
	}
	if got := DeriveUUID("dgx-h100", platform.Address{Bus: 0x18}); !uuidPattern.MatchString(got) {
		t.Errorf("derived UUID %q has the wrong form", got)
	}
}
