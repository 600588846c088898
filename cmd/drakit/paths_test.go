package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestAbsolutePathFlags: a relative path flag becomes absolute against the
// working directory; absolute, empty and unset ones and other flags stay.
func TestAbsolutePathFlags(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var images, run, artifacts, name, unset string
	fs.StringVar(&images, "images-dir", "", "")
	fs.StringVar(&run, "run-dir", "", "")
	fs.StringVar(&artifacts, "artifacts", "", "")
	fs.StringVar(&name, "driver", "", "")
	fs.StringVar(&unset, "components-dir", "default/relative", "")
	if err := fs.Parse([]string{"--images-dir", "_output/images/", "--run-dir", "/abs/run", "--artifacts", "", "--driver", "rel/name"}); err != nil {
		t.Fatal(err)
	}
	if err := absolutePathFlags(fs); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ flag, got, want string }{
		{"images-dir", images, filepath.Join(wd, "_output/images")},
		{"run-dir", run, "/abs/run"},
		{"artifacts", artifacts, ""},
		{"driver", name, "rel/name"},
		{"components-dir", unset, "default/relative"},
	} {
		if c.got != c.want {
			t.Errorf("--%s = %q, want %q", c.flag, c.got, c.want)
		}
	}
}

// TestPathFlagsAreBound: every name of pathFlags is a string flag of some
// subcommand (a renamed flag would silently stop being resolved).
func TestPathFlagsAreBound(t *testing.T) {
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if pathFlags[f.Name] && f.Value.Type() == "string" {
				seen[f.Name] = true
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	for name := range pathFlags {
		if !seen[name] {
			t.Errorf("pathFlags names --%s, but no subcommand has it as a string flag", name)
		}
	}
}

// TestEnvTakesRelativePaths: `drakit env up --images-dir _output/images`
// reaches the cluster's validation with an absolute path (checked on
// status, which validates the same Config and starts nothing).
func TestEnvTakesRelativePaths(t *testing.T) {
	t.Chdir(t.TempDir())
	out, err := runRoot(t, "env", "status", "--images-dir", "_output/images", "--run-dir", "run")
	if err != nil && strings.Contains(err.Error(), "absolute, clean") {
		t.Fatalf("drakit env status with relative paths: %v\n%s", err, out)
	}
}
