package cli_test

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cluster"
	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
)

// TestClusterFlagsMapOntoConfig checks that every cluster.Config field has
// exactly one flag and every flag sets exactly one field.
func TestClusterFlagsMapOntoConfig(t *testing.T) {
	cfg := cluster.DefaultConfig()
	fs := pflag.NewFlagSet("env", pflag.ContinueOnError)
	cli.BindClusterFlags(fs, &cfg)
	clitest.CheckFlagsMapOneToOne(t, fs, &cfg)
	if cfg.StopTimeout != 7*time.Minute+3*time.Second {
		t.Errorf("--stop-timeout did not reach Config.StopTimeout: %v", cfg.StopTimeout)
	}
}
