package procstat

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestState(t *testing.T) {
	for stat, want := range map[string]string{
		"20807 (drakit) S 1 20807 20807 0 -1": "S",
		"42 (a) b) (c) Z 1 2":                 "Z",
		"7 (sh) R":                            "R",
		"7 (sh)":                              "",
		"":                                    "",
	} {
		if got := State([]byte(stat)); got != want {
			t.Errorf("State(%q) = %q, want %q", stat, got, want)
		}
	}
}

func TestExited(t *testing.T) {
	if Exited(os.Getpid()) {
		t.Error("this test's own process reads as exited")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if !Exited(cmd.Process.Pid) {
		t.Errorf("PID %d of a reaped process reads as running", cmd.Process.Pid)
	}
}

func FuzzState(f *testing.F) {
	f.Add([]byte("20807 (drakit) S 1 20807 20807 0 -1"), "S")
	f.Add([]byte("42 (a) b) (c) Z 1 2"), "Z")
	f.Add([]byte("7 (sh) R"), "R")
	f.Fuzz(func(t *testing.T, stat []byte, state string) {
		got := State(stat)
		if strings.ContainsAny(got, " \t\n") {
			t.Errorf("State(%q) = %q: holds white space", stat, got)
		}
		// A comm of any bytes but a newline keeps the state after it.
		if state == "" || strings.ContainsAny(state, " \t\n\v\f\r)") || bytes.ContainsAny(stat, "\n") {
			return
		}
		line := append(append([]byte("1 ("), stat...), []byte(") "+state+" 1")...)
		if got := State(line); got != state {
			t.Errorf("State(%q) = %q, want %q", line, got, state)
		}
	})
}
