package profile

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/emulator/internal/fielderr"
	"drakit.dev/drakit/internal/strictyaml"
)

// ErrInvalid classifies every error about a profile's content: YAML syntax,
// unknown fields, wrong types and failed validation, also those the device
// kinds report (gpu.GPU.MIGLayout).
var ErrInvalid = fielderr.ErrInvalid

// ErrNotFound is returned for a built-in profile name that does not exist.
var ErrNotFound = errors.New("node profile not found")

// ValidationError lists a profile's problems with their field paths; it
// matches ErrInvalid.
type ValidationError = strictyaml.FieldErrors

// NewValidationError is the ValidationError of the profile named source
// ("file x.yaml", "built-in profile dgx-h100").
func NewValidationError(source string, errs field.ErrorList) *ValidationError {
	return &ValidationError{Source: source, Class: ErrInvalid, Errs: errs}
}

// Parse decodes one profile document strictly (strictyaml.Decode): YAML
// syntax errors, duplicate keys, a second YAML document, a wrong apiVersion
// or kind, unknown fields (matched case-sensitively) and values of the wrong
// type are errors, the last three reported with field paths as a
// *ValidationError. Parse neither defaults nor validates.
func Parse(data []byte) (*Profile, error) {
	p := &Profile{}
	errs, err := strictyaml.Decode(data, APIVersion, Kind, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(errs) > 0 {
		return nil, NewValidationError("profile", errs)
	}
	return p, nil
}

// Load returns a defaulted, validated profile: the built-in profile called
// nameOrPath, or the file at nameOrPath when it contains a path separator or
// ends in .yaml or .yml (write ./name for a file in the current directory).
func Load(nameOrPath string) (*Profile, error) { return LoadSeeded(nameOrPath, "") }

// LoadSeeded is Load with spec.uuidSeed set to uuidSeed (when not empty)
// before the defaults are filled in: the derived GPU UUIDs and NIC MACs of
// the same profile then differ per seed (one per node of a multi-node
// cluster); UUIDs and MACs the profile spells out stay as they are.
func LoadSeeded(nameOrPath, uuidSeed string) (*Profile, error) {
	if isFile(nameOrPath) {
		data, err := os.ReadFile(nameOrPath)
		if err != nil {
			return nil, fmt.Errorf("read node profile %s: %w", nameOrPath, err)
		}
		return load("file "+nameOrPath, data, uuidSeed)
	}
	return builtin(nameOrPath, uuidSeed)
}

// Read parses the built-in profile called nameOrPath, or the file at
// nameOrPath (told apart as Load does), without defaulting or validating
// it, for a caller that changes it first (a cluster profile sets each
// node's uuidSeed and fabric membership); source names it for errors
// ("file x.yaml", "built-in profile dgx-h100").
func Read(nameOrPath string) (p *Profile, source string, err error) {
	var data []byte
	if isFile(nameOrPath) {
		source = "file " + nameOrPath
		if data, err = os.ReadFile(nameOrPath); err != nil {
			return nil, source, fmt.Errorf("read node profile %s: %w", nameOrPath, err)
		}
	} else {
		source = "built-in profile " + nameOrPath
		if data, err = builtinData(nameOrPath); err != nil {
			return nil, source, err
		}
	}
	p, err = Parse(data)
	if err != nil {
		var verr *ValidationError
		if errors.As(err, &verr) {
			verr.Source = source
			return nil, source, verr
		}
		return nil, source, fmt.Errorf("%s: %w", source, err)
	}
	return p, source, nil
}

// isFile tells a profile file from a built-in name: a path separator or a
// .yaml or .yml suffix.
func isFile(nameOrPath string) bool {
	return strings.ContainsRune(nameOrPath, os.PathSeparator) ||
		strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml")
}

// LoadFile reads, parses, defaults and validates the profile file at path.
func LoadFile(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read node profile %s: %w", path, err)
	}
	return load("file "+path, data, "")
}

// load parses, seeds (uuidSeed, when not empty), defaults and validates.
func load(source string, data []byte, uuidSeed string) (*Profile, error) {
	p, err := Parse(data)
	if err != nil {
		var verr *ValidationError
		if errors.As(err, &verr) {
			verr.Source = source
			return nil, verr
		}
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if uuidSeed != "" {
		p.Spec.UUIDSeed = uuidSeed
	}
	p.Default()
	if errs := p.Validate(); len(errs) > 0 {
		return nil, NewValidationError(source, errs)
	}
	return p, nil
}
