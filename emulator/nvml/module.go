package nvml

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
)

// GoNVMLModulePath is the Go module whose nvml.h defines the ABI the shim
// exports.
const GoNVMLModulePath = "github.com/NVIDIA/go-nvml"

// GoNVMLModule is the go-nvml module a Go module builds with.
type GoNVMLModule struct {
	Version string // e.g. v0.13.4-1
	Dir     string // the module's directory in the module cache
}

// HeaderDir is the directory holding the module's nvml.h.
func (m GoNVMLModule) HeaderDir() string { return filepath.Join(m.Dir, "pkg", "nvml") }

// HeaderPath is the path of nvml.h inside the module.
const HeaderPath = "pkg/nvml/nvml.h"

// LocateGoNVML asks the go command, run in dir (any directory inside a
// module that requires go-nvml, such as drakit's), which go-nvml version the
// module uses and where it lies. It needs the go tool and the module cache.
func LocateGoNVML(ctx context.Context, dir string) (GoNVMLModule, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-json", GoNVMLModulePath)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return GoNVMLModule{}, fmt.Errorf("locate module %s from %s: %w: %s", GoNVMLModulePath, dir, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var m GoNVMLModule
	if err := json.Unmarshal(out, &m); err != nil {
		return GoNVMLModule{}, fmt.Errorf("locate module %s: decode go list output: %w", GoNVMLModulePath, err)
	}
	if m.Dir == "" || m.Version == "" {
		return GoNVMLModule{}, fmt.Errorf("locate module %s from %s: go list reports no version or directory (is the module downloaded?)", GoNVMLModulePath, dir)
	}
	return m, nil
}
