package unixsocket

import (
	"strings"
	"testing"
)

func TestCheckSocketPath(t *testing.T) {
	if err := CheckSocketPath("/" + strings.Repeat("s", MaxSocketPath-1)); err != nil {
		t.Errorf("a path at the limit: %v", err)
	}
	err := CheckSocketPath("/" + strings.Repeat("s", MaxSocketPath))
	if want := "is 108 bytes, 1 over the 107-byte AF_UNIX limit"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a path one over the limit: %v, want an error containing %q", err, want)
	}
}
