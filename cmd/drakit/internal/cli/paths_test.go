package cli

import (
	"path/filepath"
	"testing"

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
	if err := AbsolutePathFlags(fs); err != nil {
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
