package profile

import (
	"embed"
	"fmt"
	"path"
	"slices"
	"strings"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// BuiltinNames lists the built-in profiles, sorted.
func BuiltinNames() []string {
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		panic(fmt.Sprintf("read embedded profiles: %v", err)) // the directory is compiled in
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// Builtin returns the built-in profile called name, defaulted and validated.
// The result is a fresh copy the caller may change.
func Builtin(name string) (*Profile, error) { return builtin(name, "") }

// builtin loads a built-in profile with an optional UUID seed (LoadSeeded).
func builtin(name, uuidSeed string) (*Profile, error) {
	data, err := builtinData(name)
	if err != nil {
		return nil, err
	}
	return load("built-in profile "+name, data, uuidSeed)
}

// builtinData is the YAML of the built-in profile called name.
func builtinData(name string) ([]byte, error) {
	if !slices.Contains(BuiltinNames(), name) {
		return nil, fmt.Errorf("%w: no built-in profile %q (built-in: %s; write ./%s for a file)",
			ErrNotFound, name, strings.Join(BuiltinNames(), ", "), name)
	}
	data, err := builtinFS.ReadFile(path.Join("builtin", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("read built-in profile %s: %w", name, err)
	}
	return data, nil
}
