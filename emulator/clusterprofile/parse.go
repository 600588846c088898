package clusterprofile

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/internal/strictyaml"
)

// ErrInvalid classifies every error about a cluster profile's content:
// YAML syntax, unknown fields, wrong types, failed validation, and node
// profiles that do not fit the nodes they are given to.
var ErrInvalid = errors.New("invalid cluster profile")

// ErrNotFound is returned for a built-in cluster profile name that does
// not exist.
var ErrNotFound = errors.New("cluster profile not found")

// ErrUnknownNode is returned for a node name the cluster profile does not
// have.
var ErrUnknownNode = errors.New("no such node in the cluster profile")

// ValidationError lists a cluster profile's problems with their field
// paths; it matches ErrInvalid.
type ValidationError = strictyaml.FieldErrors

// newValidationError is the ValidationError of the cluster profile named
// source ("file x.yaml", "built-in cluster profile nvl72").
func newValidationError(source string, errs field.ErrorList) *ValidationError {
	return &ValidationError{Source: source, Class: ErrInvalid, Errs: errs}
}

// Source is a loaded cluster profile with where it came from.
type Source struct {
	// Profile is defaulted and validated.
	Profile *ClusterProfile
	// Name is "file x.yaml" or "built-in cluster profile nvl72".
	Name string
	// Dir is the directory relative node profile paths start from: the
	// file's directory, or "" for a built-in (whose node profiles are
	// built-in names).
	Dir string
}

// Parse decodes one cluster profile document strictly (strictyaml.Decode);
// it neither defaults nor validates.
func Parse(data []byte) (*ClusterProfile, error) {
	cp := &ClusterProfile{}
	errs, err := strictyaml.Decode(data, APIVersion, Kind, cp)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(errs) > 0 {
		return nil, newValidationError("cluster profile", errs)
	}
	return cp, nil
}

//go:embed builtin/*.yaml
var builtinFS embed.FS

// BuiltinNames lists the built-in cluster profiles, sorted.
func BuiltinNames() []string {
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		panic(fmt.Sprintf("read embedded cluster profiles: %v", err)) // compiled in
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// Load returns the built-in cluster profile called nameOrPath, or the file
// at nameOrPath when it contains a path separator or ends in .yaml or .yml;
// defaulted and validated.
func Load(nameOrPath string) (*Source, error) {
	if strings.ContainsRune(nameOrPath, os.PathSeparator) ||
		strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml") {
		data, err := os.ReadFile(nameOrPath)
		if err != nil {
			return nil, fmt.Errorf("read cluster profile %s: %w", nameOrPath, err)
		}
		return load("file "+nameOrPath, filepath.Dir(nameOrPath), data)
	}
	if !slices.Contains(BuiltinNames(), nameOrPath) {
		return nil, fmt.Errorf("%w: no built-in cluster profile %q (built-in: %s; write ./%s for a file)",
			ErrNotFound, nameOrPath, strings.Join(BuiltinNames(), ", "), nameOrPath)
	}
	data, err := builtinFS.ReadFile(path.Join("builtin", nameOrPath+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("read built-in cluster profile %s: %w", nameOrPath, err)
	}
	return load("built-in cluster profile "+nameOrPath, "", data)
}

func load(source, dir string, data []byte) (*Source, error) {
	cp, err := Parse(data)
	if err != nil {
		var verr *ValidationError
		if errors.As(err, &verr) {
			verr.Source = source
			return nil, verr
		}
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	cp.Default()
	if errs := cp.Validate(); len(errs) > 0 {
		return nil, newValidationError(source, errs)
	}
	return &Source{Profile: cp, Name: source, Dir: dir}, nil
}
