package images

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// ErrInvalidSpec is wrapped by every error Spec.Validate returns.
var ErrInvalidSpec = errors.New("invalid image spec")

// DefaultPath is the PATH written into an image's environment when Spec.Env
// sets none, the value runtimes conventionally assume.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// fixedModTime is the modification time of every entry in a layer and in the
// outer archive, so that archives do not depend on when or from what they
// were built.
var fixedModTime = time.Unix(0, 0).UTC()

// Spec describes a single-layer image.
type Spec struct {
	// Name is the image reference written into RepoTags, with a tag,
	// for example drakit.dev/probe:dev.
	Name string
	// Files maps a container path (absolute) to the host file copied
	// there. Host symlinks are followed; the file's permission bits are kept.
	Files map[string]string
	// Entrypoint is the image's entrypoint (argv).
	Entrypoint []string
	// Env is the image's environment, KEY=VALUE each. DefaultPath is
	// added when no entry sets PATH.
	Env []string
	// WithSharedLibraries copies the ELF interpreter and every shared
	// library ldd reports for each dynamically linked file in Files, at the
	// path ldd reports, so the files run without a base layer.
	WithSharedLibraries bool
}

// referencePattern accepts an image reference with an explicit tag:
// [host[:port]/]path[:tag] in the lower-case grammar of the distribution spec.
var referencePattern = regexp.MustCompile(
	`^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// Validate checks the spec without touching the file system.
func (s Spec) Validate() error {
	if !referencePattern.MatchString(s.Name) {
		return fmt.Errorf("%w: Name %q is not an image reference with a tag (like drakit.dev/probe:dev)", ErrInvalidSpec, s.Name)
	}
	if len(s.Files) == 0 {
		return fmt.Errorf("%w: Files is empty", ErrInvalidSpec)
	}
	for ctrPath, hostPath := range s.Files {
		if !path.IsAbs(ctrPath) || path.Clean(ctrPath) != ctrPath || ctrPath == "/" {
			return fmt.Errorf("%w: Files: container path %q must be absolute, clean and not /", ErrInvalidSpec, ctrPath)
		}
		if hostPath == "" {
			return fmt.Errorf("%w: Files: container path %q has an empty host path", ErrInvalidSpec, ctrPath)
		}
	}
	for i, kv := range s.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("%w: Env[%d] %q is not KEY=VALUE", ErrInvalidSpec, i, kv)
		}
	}
	return nil
}

// env returns the image environment: Spec.Env plus DefaultPath when Env has
// no PATH entry.
func (s Spec) env() []string {
	for _, kv := range s.Env {
		if strings.HasPrefix(kv, "PATH=") {
			return s.Env
		}
	}
	return append(append([]string{}, s.Env...), DefaultPath)
}

// imageConfig is the part of the OCI/Docker image configuration drakit writes.
type imageConfig struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Config       containerConfig `json:"config"`
	RootFS       rootFS          `json:"rootfs"`
}

type containerConfig struct {
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Env        []string `json:"Env,omitempty"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// manifestEntry is one element of a docker-archive's manifest.json.
type manifestEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

// layerName is the layer's file name inside the archive.
const layerName = "layer.tar"

// Build writes the docker-archive of spec to outPath (replaced atomically).
func Build(ctx context.Context, spec Spec, outPath string) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	files, err := collectFiles(ctx, spec)
	if err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	dir := filepath.Dir(outPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	layer, err := os.CreateTemp(dir, ".layer-*.tar")
	if err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	defer os.Remove(layer.Name())
	defer layer.Close()
	layerHash := sha256.New()
	if err := writeLayer(io.MultiWriter(layer, layerHash), files); err != nil {
		return fmt.Errorf("build image %s: write layer: %w", spec.Name, err)
	}
	layerSize, err := layer.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	diffID := "sha256:" + hex.EncodeToString(layerHash.Sum(nil))

	config, err := json.Marshal(imageConfig{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Config:       containerConfig{Entrypoint: spec.Entrypoint, Env: spec.env()},
		RootFS:       rootFS{Type: "layers", DiffIDs: []string{diffID}},
	})
	if err != nil {
		return fmt.Errorf("build image %s: encode config: %w", spec.Name, err)
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	manifest, err := json.Marshal([]manifestEntry{{Config: configName, RepoTags: []string{spec.Name}, Layers: []string{layerName}}})
	if err != nil {
		return fmt.Errorf("build image %s: encode manifest: %w", spec.Name, err)
	}

	out, err := os.CreateTemp(dir, ".image-*.tar")
	if err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	if _, err := layer.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	tw := tar.NewWriter(out)
	if err := writeTarFile(tw, configName, 0o644, int64(len(config)), strings.NewReader(string(config))); err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	if err := writeTarFile(tw, layerName, 0o644, layerSize, layer); err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	if err := writeTarFile(tw, "manifest.json", 0o644, int64(len(manifest)), strings.NewReader(string(manifest))); err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	if err := out.Chmod(0o644); err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	if err := os.Rename(out.Name(), outPath); err != nil {
		return fmt.Errorf("build image %s: %w", spec.Name, err)
	}
	logger.V(1).Info("Built image", "image", spec.Name, "path", outPath, "files", len(files), "layerBytes", layerSize, "diffID", diffID)
	return nil
}

// layerFile is one regular file of the layer.
type layerFile struct {
	hostPath string
	mode     os.FileMode
	size     int64
}

// collectFiles resolves the spec's files (and, when asked, their shared
// libraries) into container path → host file.
func collectFiles(ctx context.Context, spec Spec) (map[string]layerFile, error) {
	files := make(map[string]layerFile, len(spec.Files))
	add := func(ctrPath, hostPath string) error {
		fi, err := os.Stat(hostPath)
		if err != nil {
			return fmt.Errorf("file %s for %s: %w", hostPath, ctrPath, err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("file %s for %s: not a regular file (%s)", hostPath, ctrPath, fi.Mode().Type())
		}
		files[ctrPath] = layerFile{hostPath: hostPath, mode: fi.Mode().Perm(), size: fi.Size()}
		return nil
	}
	ctrPaths := make([]string, 0, len(spec.Files))
	for p := range spec.Files {
		ctrPaths = append(ctrPaths, p)
	}
	sort.Strings(ctrPaths)
	for _, p := range ctrPaths {
		if err := add(p, spec.Files[p]); err != nil {
			return nil, err
		}
	}
	if !spec.WithSharedLibraries {
		return files, nil
	}
	for _, p := range ctrPaths {
		libs, err := SharedLibraries(ctx, spec.Files[p])
		if err != nil {
			return nil, err
		}
		for _, lib := range libs {
			if _, explicit := files[lib]; explicit {
				continue // a file the spec places itself wins
			}
			if err := add(lib, lib); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// writeLayer writes the layer tar: every parent directory of every file, then
// the files, in sorted path order with fixed metadata.
func writeLayer(w io.Writer, files map[string]layerFile) error {
	dirs := map[string]bool{}
	for p := range files {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	// /tmp is writable scratch space in every image, as programs expect.
	dirs["/tmp"] = true
	type entry struct {
		name string
		dir  bool
	}
	entries := make([]entry, 0, len(dirs)+len(files))
	for d := range dirs {
		if _, isFile := files[d]; isFile {
			return fmt.Errorf("path %s is both a file and a parent directory", d)
		}
		entries = append(entries, entry{name: d, dir: true})
	}
	for p := range files {
		entries = append(entries, entry{name: p})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	tw := tar.NewWriter(w)
	for _, e := range entries {
		name := strings.TrimPrefix(e.name, "/")
		if e.dir {
			mode := int64(0o755)
			if e.name == "/tmp" {
				mode = 0o1777
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: fixedModTime}); err != nil {
				return err
			}
			continue
		}
		f := files[e.name]
		src, err := os.Open(f.hostPath)
		if err != nil {
			return err
		}
		err = writeTarFile(tw, name, int64(f.mode), f.size, src)
		src.Close()
		if err != nil {
			return fmt.Errorf("copy %s: %w", f.hostPath, err)
		}
	}
	return tw.Close()
}

// writeTarFile writes one regular file with fixed metadata; exactly size
// bytes must come from r.
func writeTarFile(tw *tar.Writer, name string, mode, size int64, r io.Reader) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: size, ModTime: fixedModTime}); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(r, size))
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%s: wrote %d of %d bytes (file changed while building?)", name, n, size)
	}
	return nil
}
