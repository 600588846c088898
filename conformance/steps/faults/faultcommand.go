package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/internal/shellquote"
)

// faultOutputLimit is how much of the end of a fault command's output the
// kit keeps for its messages and attachments.
const faultOutputLimit = 4 << 10

// tailBuffer keeps the last faultOutputLimit bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - faultOutputLimit; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if s := strings.TrimSpace(string(t.b)); s != "" {
		return s
	}
	return "(empty)"
}

// runFaultCommand runs argv, an expansion of the driver's fault command, on
// the kit's host, bounded by Timeouts.FaultCommand, with the kit's
// environment and, where the kit knows the emulator root of the node,
// DRAKIT_EMULATOR_ROOT set to it: drakit's emulator's fault command finds
// the node's emulated hardware there. It returns the command's standard
// output. A command that cannot start, exits non-zero or outlives the
// timeout is a kit error naming the command line, how it ended and its
// standard error: the driver is not at fault.
func (w *world) runFaultCommand(ctx context.Context, node string, argv []string) (string, error) {
	line := commandLine(argv)
	program, err := resolveProgram(argv[0])
	if err != nil {
		return "", kit.KitFailure(fmt.Errorf("run fault command %s: %w", line, err))
	}
	timeout := w.Cfg.Timeouts.FaultCommand
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, program, argv[1:]...)
	cmd.Env = os.Environ()
	if root := w.Cfg.EmulatorRootOf(node); root != "" {
		cmd.Env = append(cmd.Env, "DRAKIT_EMULATOR_ROOT="+root)
	}
	var stdout, stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A child the command leaves behind with its pipes open must not hold
	// the kit past the timeout.
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cmd.Run()
	klog.FromContext(ctx).V(2).Info("Ran the fault command", "command", line, "node", node, "duration", time.Since(start), "err", err)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), nil
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return "", kit.KitFailure(fmt.Errorf("run fault command %s: still running after %v, killed; stderr: %s", line, timeout, stderr.String()))
	case errors.As(err, &exit) && exit.Exited():
		return "", kit.KitFailure(fmt.Errorf("run fault command %s: exit code %d; stderr: %s", line, exit.ExitCode(), stderr.String()))
	}
	return "", kit.KitFailure(fmt.Errorf("run fault command %s: %w; stderr: %s", line, err, stderr.String()))
}

// resolveProgram finds a fault command's program: a path as it is, a bare
// name beside the kit's own executable first, so that "drakit" is the
// drakit that runs the kit wherever it is (make conformance runs
// _output/bin/drakit, which is not in PATH), then in PATH.
func resolveProgram(name string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) {
		return name, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	return exec.LookPath(name)
}

// plainArgument is an argument a shell takes as it is written.
var plainArgument = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// commandLine renders argv for messages as a shell would take it.
func commandLine(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		if plainArgument.MatchString(a) {
			quoted[i] = a
		} else {
			quoted[i] = shellquote.Quote(a)
		}
	}
	return strings.Join(quoted, " ")
}
