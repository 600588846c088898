package pluginharness_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/reference/pluginharness"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// TestCheckpointFormat pins the file a prepared claim leaves, with and
// without a checksum: the JSON keys, the version, the checksum of the
// claims' compact JSON, mode 0600 and no temporary file left.
func TestCheckpointFormat(t *testing.T) {
	t.Parallel()
	claims := `{"` + uidA + `":{"namespace":"test","name":"a","devices":[{"request":"r","pool":"127.0.0.1","device":"dev-3",` +
		`"cdiDeviceIDs":["k8s.test.drakit.dev/claim=` + uidA + `-dev-3"],"set":true}]}}`
	sum := sha256.Sum256([]byte(claims))
	for _, checksum := range []bool{false, true} {
		t.Run(fmt.Sprintf("checksum=%v", checksum), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.cfg.Checksum = checksum
			p := e.plugin(t)
			if got := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("a", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-3"))); got.Err != nil {
				t.Fatalf("prepare: %v", got.Err)
			}
			data, err := os.ReadFile(e.checkpointPath())
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"version": testVersion}
			var wantClaims any
			if err := json.Unmarshal([]byte(claims), &wantClaims); err != nil {
				t.Fatal(err)
			}
			want["preparedClaims"] = wantClaims
			if checksum {
				want["checksum"] = hex.EncodeToString(sum[:])
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("checkpoint (-want +got):\n%s", diff)
			}
			fi, err := os.Stat(e.checkpointPath())
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("checkpoint mode %v, want 0600", fi.Mode().Perm())
			}
			for name := range harnesstest.DirState(t, e.cfg.CheckpointDir) {
				if strings.HasSuffix(name, ".tmp") {
					t.Errorf("temporary file %s left in the checkpoint directory", name)
				}
			}
		})
	}
}

// TestCorruptCheckpointStopsTheDriver: New refuses a checkpoint it cannot
// trust with ErrCorruptCheckpoint naming the file, and leaves it alone.
func TestCorruptCheckpointStopsTheDriver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		mutate   func(string) string
		checksum []bool // the modes in which the mutation corrupts
	}{
		{"not json", func(string) string { return "{" }, []bool{false, true}},
		{"truncated", func(s string) string { return s[:len(s)/2] }, []bool{false, true}},
		{"wrong version", func(s string) string { return strings.Replace(s, testVersion, "test.drakit.dev/checkpoint/v0", 1) }, []bool{false, true}},
		{"unknown field", func(s string) string { return strings.Replace(s, `"version"`, `"extra": 1, "version"`, 1) }, []bool{false, true}},
		{"checksum mismatch", func(s string) string { return strings.Replace(s, `"dev-0"`, `"dev-1"`, 1) }, []bool{true}},
		{"checksum without checksums", func(s string) string { return strings.Replace(s, `"version"`, `"checksum": "00", "version"`, 1) }, []bool{false}},
	} {
		for _, checksum := range tc.checksum {
			t.Run(fmt.Sprintf("%s/checksum=%v", tc.name, checksum), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				e.cfg.Checksum = checksum
				if r := harnesstest.PrepareOne(t, e.plugin(t), harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-0"))); r.Err != nil {
					t.Fatal(r.Err)
				}
				path := e.checkpointPath()
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				mutated := tc.mutate(string(data))
				if mutated == string(data) {
					t.Fatal("mutation did not change the checkpoint")
				}
				if err := os.WriteFile(path, []byte(mutated), 0o600); err != nil {
					t.Fatal(err)
				}
				_, err = e.tryPlugin(t)
				if !errors.Is(err, pluginharness.ErrCorruptCheckpoint) || !strings.Contains(err.Error(), path) {
					t.Errorf("got %v, want ErrCorruptCheckpoint naming %s", err, path)
				}
				if after, _ := os.ReadFile(path); string(after) != mutated {
					t.Error("the corrupt checkpoint was changed")
				}
			})
		}
	}
}

// FuzzCheckpointLoad: any file content loads or fails with
// ErrCorruptCheckpoint, never panics, and what loads survives a save and a
// load unchanged.
func FuzzCheckpointLoad(f *testing.F) {
	const v = `"version":"` + testVersion + `"`
	f.Add([]byte(`{`+v+`,"preparedClaims":{}}`), false)
	f.Add([]byte(`{`+v+`,"preparedClaims":{"u":{"namespace":"n","name":"c","devices":[`+
		`{"request":"r","pool":"p","device":"dev-0","adminAccess":true,"cdiDeviceIDs":["k8s.test.drakit.dev/claim=u-dev-0"],"set":true}],"incomplete":true}}}`), false)
	f.Add([]byte(`{`+v+`,"checksum":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","preparedClaims":{}}`), true)
	f.Add([]byte(`{`+v+`,"preparedClaims":{`), false)
	f.Add([]byte(`null`), true)
	f.Fuzz(func(t *testing.T, data []byte, checksum bool) {
		cp := &pluginharness.Checkpoint[record]{Path: filepath.Join(t.TempDir(), pluginharness.CheckpointFile), Version: testVersion, Checksum: checksum}
		if err := os.WriteFile(cp.Path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		claims, err := cp.Load()
		if err != nil {
			if !errors.Is(err, pluginharness.ErrCorruptCheckpoint) {
				t.Fatalf("load: %v, want ErrCorruptCheckpoint", err)
			}
			return
		}
		if err := cp.Save(claims); err != nil {
			t.Fatalf("save what loaded: %v", err)
		}
		again, err := cp.Load()
		if err != nil {
			t.Fatalf("load what was saved: %v", err)
		}
		if !reflect.DeepEqual(claims, again) {
			t.Fatalf("round trip changed the claims:\n%#v\n%#v", claims, again)
		}
	})
}

// TestCheckpointMissingFile: no file is no claims, and the first save
// creates it.
func TestCheckpointMissingFile(t *testing.T) {
	t.Parallel()
	cp := &pluginharness.Checkpoint[record]{Path: filepath.Join(t.TempDir(), pluginharness.CheckpointFile), Version: testVersion, Checksum: true}
	claims, err := cp.Load()
	if err != nil || claims == nil || len(claims) != 0 {
		t.Fatalf("load of a missing file: %v, %v; want no claims", claims, err)
	}
	if err := cp.Save(nil); err != nil {
		t.Fatal(err)
	}
	if claims, err := cp.Load(); err != nil || len(claims) != 0 {
		t.Errorf("load after saving none: %v, %v", claims, err)
	}
}

// TestWriteFileAtomic: the file is replaced with the content and mode,
// and no temporary file is left; a missing directory is an error.
func TestWriteFileAtomic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, content := range []string{"old\n", "new\n"} {
		if err := pluginharness.WriteFileAtomic(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(map[string]string{"f": "new\n"}, harnesstest.DirState(t, dir)); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want 0644", fi.Mode().Perm(), err)
	}
	if err := pluginharness.WriteFileAtomic(filepath.Join(dir, "missing", "f"), nil, 0o644); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}
