package pluginharness

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CheckpointFile is the checkpoint's name in Config.CheckpointDir.
const CheckpointFile = "checkpoint.json"

// ErrCorruptCheckpoint is returned when the checkpoint cannot be trusted:
// bad or truncated JSON, unknown fields, another version, a checksum that
// does not match.
var ErrCorruptCheckpoint = errors.New("corrupt checkpoint")

// Checkpoint is the file the prepared claims are kept in, by claim UID.
type Checkpoint[D any] struct {
	// Path is the file's path.
	Path string
	// Version is the only version the file is read with and written with.
	Version string
	// Checksum adds the hex SHA-256 of the JSON encoding of the claims
	// (map keys sorted, so it is deterministic) and checks it on load.
	Checksum bool
}

// checkpointFile is the file's JSON without a checksum.
type checkpointFile[D any] struct {
	Version        string              `json:"version"`
	PreparedClaims map[string]Claim[D] `json:"preparedClaims"`
}

// checksummedFile is the file's JSON with a checksum.
type checksummedFile[D any] struct {
	Version        string              `json:"version"`
	Checksum       string              `json:"checksum"`
	PreparedClaims map[string]Claim[D] `json:"preparedClaims"`
}

func checksum[D any](claims map[string]Claim[D]) (string, error) {
	data, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// Load returns the prepared claims; a missing file means none.
func (c *Checkpoint[D]) Load() (map[string]Claim[D], error) {
	data, err := os.ReadFile(c.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Claim[D]{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", c.Path, err)
	}
	var (
		version, sum string
		claims       map[string]Claim[D]
	)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if c.Checksum {
		var f checksummedFile[D]
		err = dec.Decode(&f)
		version, sum, claims = f.Version, f.Checksum, f.PreparedClaims
	} else {
		var f checkpointFile[D]
		err = dec.Decode(&f)
		version, claims = f.Version, f.PreparedClaims
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorruptCheckpoint, c.Path, err)
	}
	if version != c.Version {
		return nil, fmt.Errorf("%w: %s: version %q, want %q", ErrCorruptCheckpoint, c.Path, version, c.Version)
	}
	if claims == nil {
		claims = map[string]Claim[D]{}
	}
	if c.Checksum {
		got, err := checksum(claims)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCorruptCheckpoint, c.Path, err)
		}
		if got != sum {
			return nil, fmt.Errorf("%w: %s: checksum %s does not match content (%s)", ErrCorruptCheckpoint, c.Path, sum, got)
		}
	}
	return claims, nil
}

// Save replaces the checkpoint atomically (WriteFileAtomic, mode 0600).
func (c *Checkpoint[D]) Save(claims map[string]Claim[D]) error {
	if claims == nil {
		claims = map[string]Claim[D]{}
	}
	var f any = checkpointFile[D]{Version: c.Version, PreparedClaims: claims}
	if c.Checksum {
		sum, err := checksum(claims)
		if err != nil {
			return fmt.Errorf("encode checkpoint %s: %w", c.Path, err)
		}
		f = checksummedFile[D]{Version: c.Version, Checksum: sum, PreparedClaims: claims}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode checkpoint %s: %w", c.Path, err)
	}
	if err := WriteFileAtomic(c.Path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", c.Path, err)
	}
	return nil
}

// WriteFileAtomic replaces path with data: a temporary file in the same
// directory, chmod to mode, fsync, rename, fsync of the directory. A reader
// sees the old content or the new one, never a part of it; after a crash
// the file has one of them.
func WriteFileAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
