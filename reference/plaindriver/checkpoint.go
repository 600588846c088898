package plaindriver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// checkpointVersion is the only checkpoint format this driver reads.
const checkpointVersion = "plain.drakit.dev/checkpoint/v1"

// checkpointFile is the checkpoint's name in the state directory.
const checkpointFile = "checkpoint.json"

// ErrCorruptCheckpoint is returned when the checkpoint cannot be read as
// this driver wrote it: bad or truncated JSON, unknown fields, another
// version.
var ErrCorruptCheckpoint = errors.New("corrupt checkpoint")

// preparedClaim is what the driver remembers about a prepared claim: enough
// to unprepare it and to answer a repeated prepare.
type preparedClaim struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	Devices   []preparedDevice `json:"devices"`
}

// preparedDevice is one allocation result of the claim for this driver.
type preparedDevice struct {
	Request      string   `json:"request"`
	Pool         string   `json:"pool"`
	Device       string   `json:"device"`
	AdminAccess  bool     `json:"adminAccess,omitempty"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs"`
}

type checkpointFileFormat struct {
	Version        string                   `json:"version"`
	PreparedClaims map[string]preparedClaim `json:"preparedClaims"`
}

// checkpoint persists the prepared claims, by claim UID, in one file.
type checkpoint struct{ path string }

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
	return f.PreparedClaims, nil
}

// save replaces the checkpoint atomically (writeFileAtomic).
func (c *checkpoint) save(claims map[string]preparedClaim) error {
	if claims == nil {
		claims = map[string]preparedClaim{}
	}
	data, err := json.MarshalIndent(checkpointFileFormat{Version: checkpointVersion, PreparedClaims: claims}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode checkpoint %s: %w", c.path, err)
	}
	if err := writeFileAtomic(c.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", c.path, err)
	}
	return nil
}
