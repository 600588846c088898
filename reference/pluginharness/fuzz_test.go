package pluginharness_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// validUID is what a claim UID must look like: it names the spec file,
// whose name must fit in 255 bytes.
var validUID = regexp.MustCompile(`^[A-Za-z0-9-]{1,128}$`)

// FuzzPrepare: a claim with any UID and allocation result is prepared or
// refused with an error, never a panic; a prepared one has a spec that
// unprepare removes, and nothing is written outside the plugin's
// directories.
func FuzzPrepare(f *testing.F) {
	f.Add(uidA, testDriver, testNode, "r", "dev-1", false)
	f.Add(uidA, testDriver, testNode, "r", "dev-0", true)
	f.Add("../x", testDriver, testNode, "r", "dev-1", false)
	f.Add(strings.Repeat("I", 300), testDriver, testNode, "r", "dev-1", false)
	f.Add(uidA, testDriver, "other", "", "../../dev-1", false)
	f.Add(uidA+"-dev-0", "gpu.drakit.dev", testNode, "r", "dev-9", false)
	f.Fuzz(func(t *testing.T, uid, driver, pool, request, device string, admin bool) {
		e := newEnv(t)
		base := filepath.Dir(e.cfg.CheckpointDir)
		p := e.plugin(t)
		r := harnesstest.AllocResult(driver, pool, request, device)
		r.AdminAccess = ptr.To(admin)
		got := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("c", uid, r))
		if got.Err == nil && len(got.Devices) > 0 {
			if _, err := os.Stat(e.specPath(uid)); err != nil {
				t.Fatalf("prepared without a spec: %v", err)
			}
		}
		if err := harnesstest.Unprepare(t, p, uid)[types.UID(uid)]; err != nil && validUID.MatchString(uid) {
			t.Fatalf("unprepare: %v", err)
		}
		for dir, want := range map[string][]string{base: {"cdi", "state"}, e.cfg.CheckpointDir: {"checkpoint.json"}} {
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if !slices.Contains(want, e.Name()) {
					t.Fatalf("prepare wrote %s into %s", e.Name(), dir)
				}
			}
		}
		if specs := harnesstest.DirState(t, e.cfg.CDIDir); len(specs) != 0 {
			t.Fatalf("%v left in the CDI directory after unprepare", specs)
		}
		if hw := e.drv.set(); len(hw) != 0 {
			t.Fatalf("hardware %v left after unprepare", hw)
		}
	})
}
