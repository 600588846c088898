package interpose

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
	"drakit.dev/drakit/conformance/interpose"
)

func TestInterposeFlagsMapOneToOne(t *testing.T) {
	cfg := interpose.DefaultConfig()
	fs := pflag.NewFlagSet("interpose", pflag.ContinueOnError)
	bindInterposeFlags(fs, &cfg)
	clitest.CheckFlagsMapOneToOne(t, fs, &cfg)
}

func TestInterposeRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--driver-registration-socket or --driver-registrar-dir: one is required"},
		{[]string{"--driver-registrar-dir", "/var/lib/kubelet/plugins_registry"}, "in the kubelet's registration directory"},
		{[]string{"--driver-registration-socket", "/var/lib/kubelet/plugins_registry/x-reg.sock"}, "in the kubelet's registration directory"},
		{[]string{"--driver-registration-socket", "/d/x-reg.sock", "--control", "0.0.0.0:7070"}, "loopback only"},
		{[]string{"--driver-registration-socket", "/" + strings.Repeat("s", 110)}, "is 111 bytes, 4 over the 107-byte AF_UNIX limit"},
	} {
		cmd := NewCommand()
		cmd.SetArgs(tc.args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if !errors.Is(err, interpose.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("drakit interpose %v: got %v, want an ErrInvalidConfig naming %q", tc.args, err, tc.want)
		}
	}
}
