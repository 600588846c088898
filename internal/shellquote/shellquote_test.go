package shellquote

import (
	"os/exec"
	"testing"
)

// TestQuoteRoundTrips has sh read each quoted word back.
func TestQuoteRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", "a b\tc", "'", "$HOME `x` \"q\" \\", "new\nline"} {
		out, err := exec.Command("sh", "-c", "printf '%s' "+Quote(s)).Output()
		if err != nil {
			t.Fatalf("sh on %q: %v", s, err)
		}
		if string(out) != s {
			t.Errorf("Quote(%q) reads back as %q", s, out)
		}
	}
}
