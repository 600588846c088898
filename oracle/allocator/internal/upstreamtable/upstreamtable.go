package upstreamtable

import (
	"bytes"
	"context"
	_ "embed" // the adapter's source
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	// upstreamModule holds the table, in structured/internal/allocatortesting.
	upstreamModule = "k8s.io/dynamic-resource-allocation"
	// adapterDir is the adapter's package in the temporary module: under
	// structured/, so that structured/internal/... can be imported.
	adapterDir = "structured/drakitupstreamtable"
	// buildTag selects adapter.go's build and allocator.SetCompleteOnly.
	buildTag = "drakit_upstreamtable"
	// summaryEnv must match adapter.go.
	summaryEnv = "DRAKIT_UPSTREAMTABLE_SUMMARY"
)

//go:embed adapter.go
var adapterSource []byte

// module is what `go list -m -json` says of a module.
type module struct {
	Path      string
	Version   string
	Dir       string
	GoVersion string
	Replace   *module
	Error     *struct{ Err string }
}

// Run runs upstream's allocator test table against upstream's allocator
// variants and drakit's reference allocator (see the package doc) and fails
// t with go test's output when any of them fails it. It must be called from
// a test of drakit's module, whose go.mod gives the upstream version.
func Run(t *testing.T) string {
	t.Helper()
	root := mainModuleDir(t)
	up := locate(t, root)

	tmp := t.TempDir()
	dir := filepath.Join(tmp, "module")
	if err := copyTree(up.Dir, dir); err != nil {
		t.Fatalf("copy %s@%s from %s: %v", upstreamModule, up.Version, up.Dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, adapterDir)); err == nil {
		t.Fatalf("%s@%s already has %s; choose another directory for the adapter", upstreamModule, up.Version, adapterDir)
	}
	// The copy is the main module, so its own packages (the table and the
	// variants, internal ones included) build from it; drakit's module,
	// replaced by this checkout, gives the requirements: the reference
	// allocator and everything else build at drakit's versions, against the
	// copy of upstream.
	goMod := fmt.Sprintf("module %s\n\ngo %s\n\nrequire drakit.dev/drakit v0.0.0\n\nreplace drakit.dev/drakit => %s\n",
		upstreamModule, up.GoVersion, root)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatalf("read drakit's go.sum: %v", err)
	}
	adapter := filepath.Join(dir, adapterDir, "adapter_test.go")
	summaryFile := filepath.Join(tmp, "summary.txt")
	for _, f := range []struct {
		path string
		data []byte
	}{
		{filepath.Join(dir, "go.mod"), []byte(goMod)},
		{filepath.Join(dir, "go.sum"), sum},
		{adapter, adapterSource},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ctx := t.Context()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-10*time.Second))
		defer cancel()
	}
	// -mod=mod lets go complete the generated go.mod (the modules of the
	// packages the copy imports) from the module graph.
	cmd := exec.CommandContext(ctx, "go", "test", "-mod=mod", "-count=1", "-tags="+buildTag, "./"+adapterDir)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", summaryEnv+"="+summaryFile)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(start).Round(100 * time.Millisecond)
	if err != nil {
		t.Fatalf("upstream's allocator table (%s@%s, %s) fails after %v: %v\n%s",
			upstreamModule, up.Version, filepath.Join(up.Dir, "structured/internal/allocatortesting"), elapsed, err, out)
	}
	summary, err := os.ReadFile(summaryFile)
	if err != nil {
		t.Fatalf("the table passed, but its adapter wrote no summary: %v\n%s", err, out)
	}
	t.Logf("upstream's allocator table (%s@%s) passed in %v (go test of a temporary module, build included):\n%s%s",
		upstreamModule, up.Version, elapsed, out, summary)
	return string(summary)
}

// mainModuleDir is the root of drakit's checkout.
func mainModuleDir(t *testing.T) string {
	t.Helper()
	out := goCmd(t, ".", "env", "GOMOD")
	goMod := strings.TrimSpace(string(out))
	if goMod == "" || goMod == os.DevNull {
		t.Fatalf("upstream's table must run from drakit's module; go env GOMOD says %q", goMod)
	}
	return filepath.Dir(goMod)
}

// locate finds the upstream module at the version drakit's go.mod requires,
// downloading it into the module cache when it is not there.
func locate(t *testing.T, root string) module {
	t.Helper()
	list := func() module {
		var m module
		if err := json.Unmarshal(goCmd(t, root, "list", "-m", "-json", upstreamModule), &m); err != nil {
			t.Fatalf("parse go list -m -json %s: %v", upstreamModule, err)
		}
		if m.Error != nil {
			t.Fatalf("go list -m %s: %s", upstreamModule, m.Error.Err)
		}
		if m.Replace != nil {
			return *m.Replace
		}
		return m
	}
	m := list()
	if m.Dir == "" {
		// Not in the module cache yet (go.sum has its hash, so the
		// download is verified).
		cmd := exec.CommandContext(t.Context(), "go", "mod", "download", upstreamModule)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("upstream's allocator table is read from %s@%s, which is not in the module cache, and go mod download failed: %v\n%s",
				upstreamModule, m.Version, err, out)
		}
		m = list()
	}
	if m.Dir == "" || m.GoVersion == "" {
		t.Fatalf("go list -m -json %s gives no directory or go version after download: %+v", upstreamModule, m)
	}
	return m
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// copyTree copies the regular files and directories of src (read-only in
// the module cache) into dst, writable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		default:
			return nil
		}
	})
}
