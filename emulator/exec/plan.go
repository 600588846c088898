package exec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/render"
)

// Mount is one entry of a Plan: what appears at Target inside the
// namespace.
type Mount struct {
	// Target is the absolute path inside the namespace, the kernel's or the
	// driver's path (/sys/bus/pci, /dev/nvidia0); its directory has its
	// symbolic links resolved.
	Target string
	// Source is bind-mounted at Target (recursively for a directory): a path
	// below the emulator root, or the shim. Empty for a link.
	Source string
	// Link, when set, makes Target a symbolic link with this content; links
	// are only created inside a shadowed directory.
	Link string
	// Dir says Source is a directory.
	Dir bool
}

func (m Mount) String() string {
	if m.Link != "" {
		return m.Target + " -> " + m.Link
	}
	return m.Source + " on " + m.Target
}

// Shadow is a host directory over which a new tmpfs is laid inside the
// namespace. The tmpfs holds a bind mount (or, for a symbolic link, a copy)
// of every real entry of the directory, except the hidden ones and those a
// Mount replaces, so the directory looks as before plus the emulated
// entries, and nothing is created in the host's directory.
type Shadow struct {
	// Dir is the absolute directory, symbolic links resolved.
	Dir string
	// Hide are path.Match patterns of real entries left out (the host's own
	// NVIDIA device nodes and NVML library, which the emulated ones replace).
	Hide []string
	// Replaced are the names of real entries a Mount puts its own entry in
	// place of.
	Replaced []string
}

// keeps reports whether the shadow carries the real entry name over.
func (s Shadow) keeps(name string) bool {
	for _, p := range s.Hide {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	return !slices.Contains(s.Replaced, name)
}

// Plan is what Run mounts inside the namespace: the shadows first (parents
// before children), then the mounts (parents before children).
type Plan struct {
	// Root is the emulator root, absolute.
	Root    string
	Shadows []Shadow
	Mounts  []Mount
}

// surfaces are the directories of the emulator root whose entries are each
// mounted at the same path below "/" (skip: entries mounted a level deeper,
// or not at all). Everything the renderer writes under sys, dev and proc is
// covered; the NVML library and state are handled apart.
var surfaces = []struct {
	dir  string
	skip []string
}{
	{"sys/bus", nil},                    // pci: devices and drivers
	{"sys/class", nil},                  // (not rendered today)
	{"sys/kernel", nil},                 // (not rendered today)
	{"sys/devices", []string{"system"}}, // pci<domain>:<bus> host bridges
	{"sys/devices/system", nil},         // node, cpu
	{"dev", nil},                        // nvidia<minor>, nvidiactl, nvidia-caps
	{"proc", []string{"driver"}},        // devices
	{"proc/driver", nil},                // nvidia, nvidia-caps
}

// hidden are the real entries a shadow of these directories leaves out.
func hidden(dir, libraryDir string) []string {
	switch dir {
	case "/dev":
		return []string{"nvidia*"}
	case libraryDir:
		return []string{"libnvidia-ml.so*"}
	}
	return nil
}

// unshadowable are directories never laid over: the root, and the kernel's
// pseudo-filesystem roots (their magic links and cgroup mounts must stay).
func unshadowable(dir string) bool {
	return dir == "/" || dir == "/proc" || dir == "/sys" || dir == "/sys/fs" ||
		dir == "/sys/fs/cgroup" || strings.HasPrefix(dir, "/sys/fs/cgroup/")
}

// ErrNotRendered is returned for a root without a rendered node.
var ErrNotRendered = errors.New("not a rendered emulator root")

// NewPlan works out the mounts that lay cfg.Root over the host's paths,
// reading the root and (without changing anything) the host's directories.
// cfg must be defaulted and valid.
func NewPlan(cfg Config) (*Plan, error) {
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("resolve emulator root %s: %w", cfg.Root, err)
	}
	if _, err := os.Stat(filepath.Join(root, render.MarkerFile)); err != nil {
		return nil, fmt.Errorf("emulator root %s: %w (no %s); render it first: drakit emulator render --profile NAME --root %s",
			root, ErrNotRendered, render.MarkerFile, cfg.Root)
	}
	state, err := nvmlstate.ReadFile(filepath.Join(root, filepath.FromSlash(nvmlstate.RelativePath)))
	if err != nil {
		return nil, fmt.Errorf("emulator root %s: %w", root, err)
	}
	p := &Plan{Root: root}
	for _, s := range surfaces {
		entries, err := os.ReadDir(filepath.Join(root, s.dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read emulator root: %w", err)
		}
		for _, e := range entries {
			if slices.Contains(s.skip, e.Name()) {
				continue
			}
			rel := path.Join(s.dir, e.Name())
			p.Mounts = append(p.Mounts, Mount{Target: "/" + rel, Source: filepath.Join(root, rel), Dir: e.IsDir()})
		}
	}
	libs, err := libraryMounts(root, cfg, state.System.DriverVersion)
	if err != nil {
		return nil, err
	}
	p.Mounts = append(p.Mounts, libs...)
	smi, err := nvidiaSMIMount(root)
	if err != nil {
		return nil, err
	}
	p.Mounts = append(p.Mounts, smi...)
	if err := p.placeOnHost(canonicalDir(cfg.LibraryDir)); err != nil {
		return nil, err
	}
	return p, nil
}

// libraryMounts are the NVML library's entries in the library directory:
// the shim as libnvidia-ml.so.<driverVersion> with the libnvidia-ml.so.1
// link, or the root's rendered libnvidia-ml.so* entries as they are.
func libraryMounts(root string, cfg Config, driverVersion string) ([]Mount, error) {
	if cfg.Shim != "" {
		shim, err := filepath.Abs(cfg.Shim)
		if err != nil {
			return nil, fmt.Errorf("resolve --shim %s: %w", cfg.Shim, err)
		}
		file := "libnvidia-ml.so." + driverVersion
		return []Mount{
			{Target: filepath.Join(cfg.LibraryDir, file), Source: shim},
			{Target: filepath.Join(cfg.LibraryDir, "libnvidia-ml.so.1"), Link: file},
		}, nil
	}
	dir := filepath.Join(root, render.LibraryDir)
	names, err := filepath.Glob(filepath.Join(dir, "libnvidia-ml.so*"))
	if err != nil {
		return nil, err
	}
	var out []Mount
	for _, src := range names {
		fi, err := os.Lstat(src)
		if err != nil {
			return nil, fmt.Errorf("read emulator root: %w", err)
		}
		m := Mount{Target: filepath.Join(cfg.LibraryDir, filepath.Base(src))}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if m.Link, err = os.Readlink(src); err != nil {
				return nil, fmt.Errorf("read emulator root: %w", err)
			}
		case fi.Mode().IsRegular():
			m.Source = src
		default:
			continue
		}
		out = append(out, m)
	}
	if !slices.ContainsFunc(out, func(m Mount) bool { return filepath.Base(m.Target) == "libnvidia-ml.so.1" }) {
		return nil, fmt.Errorf("emulator root %s has no NVML library (%s/libnvidia-ml.so.1): render it with --shim, or give --shim",
			root, render.LibraryDir)
	}
	return out, nil
}

// nvidiaSMIMount is the root's nvidia-smi at /usr/bin/nvidia-smi, where
// NVIDIA's GPU kubelet plugin finds it with the driver root "/" (after
// /nvidia-smi and /opt/bin/nvidia-smi, which hosts do not have), and a shell
// in $PATH; none for a root rendered without one.
func nvidiaSMIMount(root string) ([]Mount, error) {
	src := filepath.Join(root, render.NvidiaSMIPath)
	fi, err := os.Lstat(src)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read emulator root: %w", err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("emulator root %s: %s is not a regular file", root, render.NvidiaSMIPath)
	}
	return []Mount{{Target: "/" + render.NvidiaSMIPath, Source: src}}, nil
}

// canonicalDir resolves the symbolic links of dir's longest existing prefix
// (/lib/x86_64-linux-gnu is /usr/lib/x86_64-linux-gnu on merged-/usr hosts)
// and appends the rest.
func canonicalDir(dir string) string {
	var rest []string
	for d := dir; ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			slices.Reverse(rest)
			return filepath.Join(append([]string{real}, rest...)...)
		}
		if d == "/" {
			return dir
		}
		rest = append(rest, filepath.Base(d))
	}
}

// compatible reports whether the host's entry fi can have source mounted
// over it: directory over directory, anything else over a non-directory
// that is not a symbolic link.
func compatible(fi fs.FileInfo, m Mount) bool {
	if m.Link != "" || fi.Mode()&fs.ModeSymlink != 0 {
		return false
	}
	return fi.IsDir() == m.Dir
}

// placeOnHost canonicalises the targets and decides the shadows: /dev and
// the library directory always (their real NVIDIA entries are hidden), and
// the nearest existing directory above every target the host lacks or has
// as another kind of file. It refuses targets that would need "/", /proc or
// /sys shadowed.
func (p *Plan) placeOnHost(libraryDir string) error {
	shadows := map[string]bool{}
	for _, dir := range []string{"/dev", libraryDir} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			shadows[dir] = true
		}
	}
	for i := range p.Mounts {
		m := &p.Mounts[i]
		m.Target = filepath.Join(canonicalDir(filepath.Dir(m.Target)), filepath.Base(m.Target))
		parent := filepath.Dir(m.Target)
		fi, err := os.Lstat(m.Target)
		switch {
		case shadows[parent]:
			continue
		case err == nil && compatible(fi, *m):
			continue
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("inspect %s: %w", m.Target, err)
		}
		// Shadow the nearest existing directory above the target (its
		// parent when the target exists as another kind of file).
		dir := parent
		for {
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
				break
			}
			dir = filepath.Dir(dir)
		}
		if unshadowable(dir) {
			what := "does not exist"
			if err == nil {
				what = "is not a " + map[bool]string{true: "directory", false: "file"}[m.Dir]
			}
			return fmt.Errorf("cannot lay the emulated %s over the host: %s %s on this host, and %s cannot be shadowed",
				strings.TrimPrefix(m.Target, "/"), m.Target, what, dir)
		}
		shadows[dir] = true
	}
	for dir := range shadows {
		p.Shadows = append(p.Shadows, Shadow{Dir: dir, Hide: hidden(dir, libraryDir)})
	}
	// A shadow's real entries that mounts put their own in place of.
	for _, m := range p.Mounts {
		for i := range p.Shadows {
			s := &p.Shadows[i]
			if rel, ok := strings.CutPrefix(m.Target, s.Dir+"/"); ok && !strings.Contains(rel, "/") {
				s.Replaced = append(s.Replaced, rel)
			}
		}
		if m.Link != "" && !shadows[filepath.Dir(m.Target)] && !p.belowShadow(m.Target) {
			return fmt.Errorf("cannot create the link %s: its directory is not shadowed", m.Target)
		}
	}
	depth := func(s string) int { return strings.Count(s, "/") }
	slices.SortFunc(p.Shadows, func(a, b Shadow) int {
		return cmpInts(depth(a.Dir), depth(b.Dir), strings.Compare(a.Dir, b.Dir))
	})
	slices.SortStableFunc(p.Mounts, func(a, b Mount) int { return cmpInts(depth(a.Target), depth(b.Target), 0) })
	return nil
}

// belowShadow reports whether target lies below a shadow through
// directories the host lacks (which are then created in the shadow).
func (p *Plan) belowShadow(target string) bool {
	for _, s := range p.Shadows {
		if strings.HasPrefix(target, s.Dir+"/") {
			return true
		}
	}
	return false
}

func cmpInts(a, b, tie int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return tie
}

// String lists the plan, one shadow or mount a line.
func (p *Plan) String() string {
	var b strings.Builder
	for _, s := range p.Shadows {
		fmt.Fprintf(&b, "tmpfs on %s (real entries bound back", s.Dir)
		if len(s.Hide) > 0 {
			fmt.Fprintf(&b, ", hiding %s", strings.Join(s.Hide, " "))
		}
		b.WriteString(")\n")
	}
	for _, m := range p.Mounts {
		b.WriteString(m.String() + "\n")
	}
	return b.String()
}
