package plaindriver

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// FuzzCheckpointLoad: any file content loads or fails with
// ErrCorruptCheckpoint, never panics, and what loads survives a save and a
// load unchanged.
func FuzzCheckpointLoad(f *testing.F) {
	f.Add([]byte(`{"version":"plain.drakit.dev/checkpoint/v1","preparedClaims":{}}`))
	f.Add([]byte(`{"version":"plain.drakit.dev/checkpoint/v1","preparedClaims":{"u":{"namespace":"n","name":"c","devices":[` +
		`{"request":"r","pool":"p","device":"dev-0","adminAccess":true,"cdiDeviceIDs":["k8s.plain.drakit.dev/claim=u-dev-0"]}]}}}`))
	f.Add([]byte(`{"version":"plain.drakit.dev/checkpoint/v1","preparedClaims":{`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		cp := &checkpoint{path: filepath.Join(dir, checkpointFile)}
		if err := os.WriteFile(cp.path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		claims, err := cp.load()
		if err != nil {
			if !errors.Is(err, ErrCorruptCheckpoint) {
				t.Fatalf("load: %v, want ErrCorruptCheckpoint", err)
			}
			return
		}
		if err := cp.save(claims); err != nil {
			t.Fatalf("save what loaded: %v", err)
		}
		again, err := cp.load()
		if err != nil {
			t.Fatalf("load what was saved: %v", err)
		}
		if !reflect.DeepEqual(claims, again) {
			t.Fatalf("round trip changed the claims:\n%#v\n%#v", claims, again)
		}
	})
}

// FuzzPrepare: a claim with any UID and allocation result is prepared or
// refused with an error, never a panic; a prepared one has a spec that
// unprepare removes, and nothing is written outside the driver's
// directories.
func FuzzPrepare(f *testing.F) {
	f.Add(uidA, testDriver, testNode, "r", "dev-1", false)
	f.Add(uidA, testDriver, testNode, "r", "dev-0", true)
	f.Add("../x", testDriver, testNode, "r", "dev-1", false)
	f.Add(uidA, testDriver, "other", "", "../../dev-1", false)
	f.Add(uidA+"-dev-0", "gpu.drakit.dev", testNode, "r", "dev-9", false)
	f.Fuzz(func(t *testing.T, uid, driver, pool, request, device string, admin bool) {
		base := t.TempDir()
		env := &testEnv{stateDir: filepath.Join(base, "state"), cdiDir: filepath.Join(base, "cdi"), devices: 4}
		p := env.plugin(t)
		r := allocResult(driver, pool, request, device)
		r.AdminAccess = ptr.To(admin)
		got := prepareOne(t, p, allocatedClaim("c", uid, r))
		if got.Err == nil && len(got.Devices) > 0 {
			if _, err := os.Stat(env.specPath(uid)); err != nil {
				t.Fatalf("prepared without a spec: %v", err)
			}
		}
		if err := unprepare(t, p, uid)[types.UID(uid)]; err != nil && checkClaimUID(uid) == nil {
			t.Fatalf("unprepare: %v", err)
		}
		entries, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "state" && e.Name() != "cdi" {
				t.Fatalf("prepare wrote %s outside its directories", e.Name())
			}
		}
		specs, err := os.ReadDir(env.cdiDir)
		if err != nil {
			t.Fatal(err)
		}
		if len(specs) != 0 {
			t.Fatalf("%s left in the CDI directory after unprepare", specs[0].Name())
		}
	})
}
