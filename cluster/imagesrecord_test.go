package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

// TestStatusReportsTheImagesDirUpUsed: up --images-dir A records A, and a
// status without --images-dir (whose configured dir is the default) says A,
// with the archives up imported.
func TestStatusReportsTheImagesDirUpUsed(t *testing.T) {
	cfg := ownershipConfig(t)
	_, ctx := ktesting.NewTestContext(t)
	if err := os.MkdirAll(cfg.RunDir, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := Status(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st.ImagesDir != cfg.ImagesDir || len(st.Images) != 0 {
		t.Errorf("before any import: images dir %q %v, want the configured %q and none", st.ImagesDir, st.Images, cfg.ImagesDir)
	}

	upCfg := cfg
	upCfg.ImagesDir = filepath.Join(t.TempDir(), "repo-images")
	if err := recordImportedImages(upCfg, []string{filepath.Join(upCfg.ImagesDir, "pause.tar"), filepath.Join(upCfg.ImagesDir, "probe.tar")}); err != nil {
		t.Fatal(err)
	}
	st, err = Status(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st.ImagesDir != upCfg.ImagesDir {
		t.Errorf("images dir = %q, want the one up imported from, %q", st.ImagesDir, upCfg.ImagesDir)
	}
	if want := []string{"pause.tar", "probe.tar"}; !slices.Equal(st.Images, want) {
		t.Errorf("images = %v, want %v", st.Images, want)
	}

	// A record that cannot be read is not trusted: the configured dir again.
	if err := os.WriteFile(importedImagesPath(cfg), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err = Status(ctx, cfg); err != nil || st.ImagesDir != cfg.ImagesDir {
		t.Errorf("with a broken record: images dir %q (%v), want %q", st.ImagesDir, err, cfg.ImagesDir)
	}
}

// TestImported: an archive counts as imported only while Up's record names
// its dir and name and it has not changed since the record was written.
func TestImported(t *testing.T) {
	cfg := ownershipConfig(t)
	cfg.ImagesDir = t.TempDir()
	if err := os.MkdirAll(cfg.RunDir, 0o755); err != nil {
		t.Fatal(err)
	}
	driver := filepath.Join(cfg.ImagesDir, "driver.tar")
	other := filepath.Join(t.TempDir(), "driver.tar")
	for _, p := range []string{driver, other} {
		if err := os.WriteFile(p, []byte("archive"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(driver, old, old); err != nil {
		t.Fatal(err)
	}
	if Imported(cfg, driver) {
		t.Errorf("without a record: %s counts as imported", driver)
	}
	if err := recordImportedImages(cfg, []string{driver}); err != nil {
		t.Fatal(err)
	}
	if !Imported(cfg, driver) {
		t.Errorf("%s: up imported it and it has not changed since, but it does not count as imported", driver)
	}
	if Imported(cfg, other) {
		t.Errorf("%s: same name in another dir counts as imported", other)
	}
	if Imported(cfg, filepath.Join(cfg.ImagesDir, "probe.tar")) {
		t.Error("probe.tar: not in the record, but counts as imported")
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(driver, later, later); err != nil {
		t.Fatal(err)
	}
	if Imported(cfg, driver) {
		t.Errorf("%s: rebuilt after the import, but counts as imported", driver)
	}
}
