package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// MetadataPath is the directory below which the kubelet plugin helper of a
// driver with device metadata (KEP-5304) bind-mounts each request's
// metadata file into the containers that use it.
const MetadataPath = "/var/run/kubernetes.io/dra-device-attributes"

// maxMetadataFile bounds what the probe reads of one metadata file: the
// report is one log line.
const maxMetadataFile = 1 << 20

// readMetadata returns the contents of the regular files below root, by
// their path below MetadataPath; nil when root is empty or does not exist.
func readMetadata(root string) (map[string]string, error) {
	var out map[string]string
	if root == "" {
		return nil, nil
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return fmt.Errorf("read device metadata %s: %w", p, err)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return fmt.Errorf("read device metadata %s: %w", p, err)
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("read device metadata %s: %w", p, err)
		}
		if info.Size() > maxMetadataFile {
			return fmt.Errorf("read device metadata %s: %d bytes, more than the probe reports (%d)", p, info.Size(), maxMetadataFile)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read device metadata %s: %w", p, err)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[path.Join(MetadataPath, filepath.ToSlash(rel))] = string(data)
		return nil
	})
	return out, err
}
