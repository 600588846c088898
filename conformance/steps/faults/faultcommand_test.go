package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/kit/kittest"
)

// The command gets the node's emulator root as $DRAKIT_EMULATOR_ROOT,
// its arguments as they are, and its standard output comes back.
func TestRunFaultCommand(t *testing.T) {
	t.Parallel()
	w := faultWorld(t)
	ctx := context.Background()
	script := `printf '%s|%s|%s' "$DRAKIT_EMULATOR_ROOT" "$0" "$1"`
	for node, root := range map[string]string{"n1": "/roots/n1", "n2": "/roots/n2"} {
		out, err := w.runFaultCommand(ctx, node, []string{"sh", "-c", script, "GPU-1 $(x)", "48"})
		if want := root + "|GPU-1 $(x)|48"; err != nil || out != want {
			t.Errorf("node %s: %q, %v; want %q", node, out, err, want)
		}
	}
	// A node the kit knows no root of: the kit's own environment.
	t.Run("unknown node", func(t *testing.T) {
		out, err := w.runFaultCommand(ctx, "n3", []string{"sh", "-c", `printf '%s' "${DRAKIT_EMULATOR_ROOT-unset}"`})
		if want := os.Getenv("DRAKIT_EMULATOR_ROOT"); err != nil || (out != want && !(want == "" && out == "unset")) {
			t.Errorf("node n3: %q, %v; want the kit's environment's %q", out, err, want)
		}
	})
}

// A failing command is the kit's failure, never the driver's: its error
// names the command line, how it ended and its standard error.
func TestRunFaultCommandFailures(t *testing.T) {
	t.Parallel()
	w := faultWorld(t)
	ctx := context.Background()
	tests := map[string]struct {
		argv []string
		want []string
	}{
		"exit code": {[]string{"sh", "-c", `echo "no such GPU: $0" >&2; exit 3`, "GPU-9"},
			[]string{`run fault command sh -c 'echo "no such GPU: $0" >&2; exit 3' GPU-9: exit code 3; stderr: no such GPU: GPU-9`}},
		"silent": {[]string{"false"}, []string{"run fault command false: exit code 1; stderr: (empty)"}},
		"timeout": {[]string{"sh", "-c", "echo stuck >&2; exec sleep 30"},
			[]string{"run fault command sh -c 'echo stuck >&2; exec sleep 30': still running after 2s, killed; stderr: stuck"}},
		"no program": {[]string{"drakit-no-such-fault-tool", "x"}, []string{"run fault command drakit-no-such-fault-tool x:", "executable file not found"}},
		"no file":    {[]string{"/nonexistent/gpuctl"}, []string{"run fault command /nonexistent/gpuctl:", "no such file or directory"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := w.runFaultCommand(ctx, "n1", tc.argv)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if !kit.OnlyKitFailures(err) {
				t.Errorf("error %v is not the kit's failure", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v: the timeout did not hold", d)
			}
		})
	}
}

// A long standard error is cut to its end, where the reason usually is.
func TestRunFaultCommandKeepsTheEndOfStderr(t *testing.T) {
	t.Parallel()
	w := faultWorld(t)
	_, err := w.runFaultCommand(context.Background(), "n1", []string{"sh", "-c", `i=0; while [ $i -lt 2000 ]; do echo "line $i" >&2; i=$((i+1)); done; echo "the reason" >&2; exit 1`})
	if err == nil || !strings.HasSuffix(err.Error(), "line 1999\nthe reason") || len(err.Error()) > faultOutputLimit+200 {
		t.Errorf("error of %d bytes: ...%q", len(fmt.Sprint(err)), tail(fmt.Sprint(err), 60))
	}
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// A bare program beside the kit's own executable wins over PATH: make
// conformance's drakit is _output/bin/drakit, not in PATH.
func TestResolveProgram(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("drakit-fault-test-%d", os.Getpid())
	beside := filepath.Join(filepath.Dir(self), name)
	if err := os.WriteFile(beside, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Skipf("cannot write beside the test binary: %v", err)
	}
	t.Cleanup(func() { os.Remove(beside) })
	if got, err := resolveProgram(name); err != nil || got != beside {
		t.Errorf("beside the kit: %q, %v; want %q", got, err, beside)
	}
	if got, err := resolveProgram("sh"); err != nil || !filepath.IsAbs(got) {
		t.Errorf("sh from PATH: %q, %v", got, err)
	}
	if got, err := resolveProgram("./bin/x"); err != nil || got != "./bin/x" {
		t.Errorf("a path: %q, %v; want it as it is", got, err)
	}
}

func TestCommandLine(t *testing.T) {
	t.Parallel()
	got := commandLine([]string{"drakit", "emulator", "fault", "xid", "--device", "GPU-0a", "--code", "48", "it's", "a b", ""})
	if want := `drakit emulator fault xid --device GPU-0a --code 48 'it'\''s' 'a b' ''`; got != want {
		t.Errorf("%s, want %s", got, want)
	}
}

// faultWorld is a world whose fault commands run with a short timeout and
// know the emulator roots of nodes n1 (the kit's node) and n2.
func faultWorld(t *testing.T) *world {
	t.Helper()
	cfg := kittest.ReferenceDriverConfig(t)
	cfg.NodeName = "n1"
	cfg.NodeEmulatorRoot = "/roots/n1"
	cfg.NodeEmulatorRoots = map[string]string{"n2": "/roots/n2"}
	cfg.Timeouts.FaultCommand = 2 * time.Second
	return &world{World: kit.NewWorld(cfg, nil, "")}
}
