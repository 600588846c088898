package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// importedImages is what Up imported into containerd, recorded in the run
// dir so that Status reports the images dir Up used rather than the one of
// the command that asks (cluster status has no --images-dir of Up's).
type importedImages struct {
	// Dir is the ImagesDir Up imported from.
	Dir string `json:"dir"`
	// Archives are the docker-archives imported, base names in import order.
	Archives []string `json:"archives"`
}

func importedImagesPath(cfg Config) string { return filepath.Join(cfg.RunDir, "images.json") }

// recordImportedImages writes the record of an import.
func recordImportedImages(cfg Config, archives []string) error {
	rec := importedImages{Dir: cfg.ImagesDir, Archives: []string{}}
	for _, a := range archives {
		rec.Archives = append(rec.Archives, filepath.Base(a))
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("record imported images: %w", err)
	}
	if err := writeFileAtomic(importedImagesPath(cfg), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("record imported images: %w", err)
	}
	return nil
}

// readImportedImages returns Up's record; ok is false when there is none
// (the cluster never imported, or the record is unreadable).
func readImportedImages(cfg Config) (importedImages, bool) {
	b, err := os.ReadFile(importedImagesPath(cfg))
	if err != nil {
		return importedImages{}, false
	}
	var rec importedImages
	if err := json.Unmarshal(b, &rec); err != nil || rec.Dir == "" {
		return importedImages{}, false
	}
	return rec, true
}

// Imported reports whether Up imported the archive at path into the
// cluster's containerds: Up's record names path's images dir and base name,
// and the file has not changed since (an archive rebuilt after Up is not
// in containerd yet).
func Imported(cfg Config, path string) bool {
	rec, ok := readImportedImages(cfg)
	if !ok {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	dir, err := filepath.Abs(rec.Dir)
	if err != nil || filepath.Dir(abs) != dir || !slices.Contains(rec.Archives, filepath.Base(abs)) {
		return false
	}
	archive, err := os.Stat(abs)
	if err != nil {
		return false
	}
	record, err := os.Stat(importedImagesPath(cfg))
	return err == nil && archive.ModTime().Before(record.ModTime())
}
