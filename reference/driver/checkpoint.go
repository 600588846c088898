package driver

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

// checkpointVersion is the only checkpoint format this driver reads.
const checkpointVersion = "drakit.dev/checkpoint/v1"

// checkpointFile is the checkpoint's name in the plugin data directory.
const checkpointFile = "checkpoint.json"

// ErrCorruptCheckpoint is returned when the checkpoint cannot be trusted: bad
// JSON, unknown version or checksum mismatch.
var ErrCorruptCheckpoint = errors.New("corrupt checkpoint")

// preparedClaim is what the driver remembers about a prepared claim; enough to
// unprepare it and to answer a repeated prepare.
type preparedClaim struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	Devices   []preparedDevice `json:"devices"`
	// Incomplete marks a claim whose prepare is creating MIG devices: it
	// is not prepared yet, and a restarted driver destroys what its
	// records name.
	Incomplete bool `json:"incomplete,omitempty"`
}

type preparedDevice struct {
	Request      string   `json:"request"`
	Pool         string   `json:"pool"`
	Device       string   `json:"device"`
	AdminAccess  bool     `json:"adminAccess,omitempty"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs"`
	// MIG is the dynamic MIG device created for a partition device.
	MIG *migRecord `json:"mig,omitempty"`
}

// checkpointFileFormat is the file's JSON. Checksum is the hex SHA-256 of the
// JSON encoding of PreparedClaims (map keys sorted, so it is deterministic).
type checkpointFileFormat struct {
	Version        string                   `json:"version"`
	Checksum       string                   `json:"checksum"`
	PreparedClaims map[string]preparedClaim `json:"preparedClaims"`
}

// checkpoint persists the prepared claims in one file.
type checkpoint struct{ path string }

func checksum(claims map[string]preparedClaim) (string, error) {
	data, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// load returns the prepared claims; a missing file means none.
func (c *checkpoint) load() (map[string]preparedClaim, error) {
	data, err := os.ReadFile(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]preparedClaim{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", c.path, err)
	}
	var f checkpointFileFormat
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorruptCheckpoint, c.path, err)
	}
	if f.Version != checkpointVersion {
		return nil, fmt.Errorf("%w: %s: version %q, want %q", ErrCorruptCheckpoint, c.path, f.Version, checkpointVersion)
	}
	if f.PreparedClaims == nil {
		f.PreparedClaims = map[string]preparedClaim{}
	}
	sum, err := checksum(f.PreparedClaims)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorruptCheckpoint, c.path, err)
	}
	if sum != f.Checksum {
		return nil, fmt.Errorf("%w: %s: checksum %s does not match content (%s)", ErrCorruptCheckpoint, c.path, f.Checksum, sum)
	}
	return f.PreparedClaims, nil
}

// save replaces the checkpoint atomically: temporary file in the same
// directory, fsync, rename, fsync of the directory.
func (c *checkpoint) save(claims map[string]preparedClaim) (err error) {
	if claims == nil {
		claims = map[string]preparedClaim{}
	}
	sum, err := checksum(claims)
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	data, err := json.MarshalIndent(checkpointFileFormat{Version: checkpointVersion, Checksum: sum, PreparedClaims: claims}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	dir := filepath.Dir(c.path)
	tmp, err := os.CreateTemp(dir, "."+checkpointFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("write checkpoint %s: %w", c.path, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write checkpoint %s: %w", c.path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sync checkpoint %s: %w", c.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", c.path, err)
	}
	if err := os.Rename(tmp.Name(), c.path); err != nil {
		return fmt.Errorf("replace checkpoint %s: %w", c.path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory of checkpoint %s: %w", c.path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory of checkpoint %s: %w", c.path, err)
	}
	return nil
}
