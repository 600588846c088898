package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tarEntry is what the tests compare of one tar member.
type tarEntry struct {
	Name    string
	Type    byte
	Mode    int64
	Content string
}

// readTar returns the members of a tar stream in order, and fails the test
// on any header with non-fixed metadata.
func readTar(t *testing.T, r io.Reader) []tarEntry {
	t.Helper()
	var entries []tarEntry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("tar member %s: metadata not fixed: mtime %v uid %d gid %d uname %q gname %q", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("read tar member %s: %v", h.Name, err)
		}
		entries = append(entries, tarEntry{Name: h.Name, Type: h.Typeflag, Mode: h.Mode, Content: string(body)})
	}
}

// archive is a parsed docker-archive.
type archive struct {
	members  map[string]string
	order    []string
	manifest []manifestEntry
	config   imageConfig
	layer    []tarEntry
}

func readArchive(t *testing.T, p string) archive {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := archive{members: map[string]string{}}
	for _, e := range readTar(t, f) {
		a.members[e.Name] = e.Content
		a.order = append(a.order, e.Name)
	}
	if err := json.Unmarshal([]byte(a.members["manifest.json"]), &a.manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(a.manifest) != 1 {
		t.Fatalf("manifest.json has %d entries, want 1", len(a.manifest))
	}
	cfg, ok := a.members[a.manifest[0].Config]
	if !ok {
		t.Fatalf("config %s named in manifest.json is not in the archive (members %v)", a.manifest[0].Config, a.order)
	}
	if err := json.Unmarshal([]byte(cfg), &a.config); err != nil {
		t.Fatalf("config: %v", err)
	}
	if len(a.manifest[0].Layers) != 1 {
		t.Fatalf("manifest lists %d layers, want 1", len(a.manifest[0].Layers))
	}
	layer, ok := a.members[a.manifest[0].Layers[0]]
	if !ok {
		t.Fatalf("layer %s is not in the archive", a.manifest[0].Layers[0])
	}
	a.layer = readTar(t, strings.NewReader(layer))
	return a
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // umask-independent
		t.Fatal(err)
	}
	return p
}

func TestBuildArchiveStructure(t *testing.T) {
	dir := t.TempDir()
	bin := writeFile(t, filepath.Join(dir, "tool"), "#!/bin/sh\necho hi\n", 0o755)
	data := writeFile(t, filepath.Join(dir, "data"), "payload", 0o640)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out", "img.tar")
	spec := Spec{
		Name:       "drakit.dev/probe:dev",
		Files:      map[string]string{"/usr/bin/tool": bin, "/etc/data": data, "/etc/linked": link},
		Entrypoint: []string{"/usr/bin/tool", "--hold"},
		Env:        []string{"A=1"},
	}
	if err := Build(context.Background(), spec, out); err != nil {
		t.Fatalf("Build: %v", err)
	}
	a := readArchive(t, out)

	layerBytes := a.members[layerName]
	wantConfigName := sha256Hex(a.members[a.manifest[0].Config]) + ".json"
	if diff := cmp.Diff([]manifestEntry{{Config: wantConfigName, RepoTags: []string{"drakit.dev/probe:dev"}, Layers: []string{layerName}}}, a.manifest); diff != "" {
		t.Errorf("manifest.json (-want +got):\n%s", diff)
	}
	wantConfig := imageConfig{
		Architecture: "amd64", OS: "linux",
		Config: containerConfig{Entrypoint: []string{"/usr/bin/tool", "--hold"}, Env: []string{"A=1", DefaultPath}},
		RootFS: rootFS{Type: "layers", DiffIDs: []string{"sha256:" + sha256Hex(layerBytes)}},
	}
	if diff := cmp.Diff(wantConfig, a.config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	wantLayer := []tarEntry{
		{Name: "etc/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "etc/data", Type: tar.TypeReg, Mode: 0o640, Content: "payload"},
		{Name: "etc/linked", Type: tar.TypeReg, Mode: 0o640, Content: "payload"},
		{Name: "tmp/", Type: tar.TypeDir, Mode: 0o1777},
		{Name: "usr/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "usr/bin/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "usr/bin/tool", Type: tar.TypeReg, Mode: 0o755, Content: "#!/bin/sh\necho hi\n"},
	}
	if diff := cmp.Diff(wantLayer, a.layer); diff != "" {
		t.Errorf("layer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{wantConfigName, layerName, "manifest.json"}, a.order); diff != "" {
		t.Errorf("archive members (-want +got):\n%s", diff)
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "f"), "same", 0o644)
	spec := Spec{Name: "drakit.dev/x:dev", Files: map[string]string{"/a/f": f, "/b/f": f}, Entrypoint: []string{"/a/f"}}
	first := filepath.Join(dir, "1.tar")
	second := filepath.Join(dir, "2.tar")
	if err := Build(context.Background(), spec, first); err != nil {
		t.Fatal(err)
	}
	// A later modification time and a new build must give the same bytes.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(f, later, later); err != nil {
		t.Fatal(err)
	}
	if err := Build(context.Background(), spec, second); err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(first)
	b2, _ := os.ReadFile(second)
	if !bytes.Equal(b1, b2) {
		t.Errorf("two builds of the same spec differ (%d vs %d bytes)", len(b1), len(b2))
	}
	// The explicit PATH suppresses DefaultPath.
	spec.Env = []string{"PATH=/bin"}
	if err := Build(context.Background(), spec, second); err != nil {
		t.Fatal(err)
	}
	if got := readArchive(t, second).config.Config.Env; !cmp.Equal(got, []string{"PATH=/bin"}) {
		t.Errorf("Env with PATH = %v, want [PATH=/bin]", got)
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "f"), "x", 0o644)
	tests := []struct {
		name    string
		spec    Spec
		wantErr string
		invalid bool
	}{
		{name: "no tag", spec: Spec{Name: "drakit.dev/probe", Files: map[string]string{"/f": f}}, wantErr: `Name "drakit.dev/probe"`, invalid: true},
		{name: "upper case", spec: Spec{Name: "Drakit/probe:dev", Files: map[string]string{"/f": f}}, wantErr: "Name", invalid: true},
		{name: "no files", spec: Spec{Name: "a/b:c"}, wantErr: "Files is empty", invalid: true},
		{name: "relative path", spec: Spec{Name: "a/b:c", Files: map[string]string{"f": f}}, wantErr: `container path "f"`, invalid: true},
		{name: "unclean path", spec: Spec{Name: "a/b:c", Files: map[string]string{"/x/../f": f}}, wantErr: `container path "/x/../f"`, invalid: true},
		{name: "bad env", spec: Spec{Name: "a/b:c", Files: map[string]string{"/f": f}, Env: []string{"NOVALUE"}}, wantErr: `Env[0] "NOVALUE"`, invalid: true},
		{name: "missing host file", spec: Spec{Name: "a/b:c", Files: map[string]string{"/f": filepath.Join(dir, "nope")}}, wantErr: "nope for /f"},
		{name: "directory", spec: Spec{Name: "a/b:c", Files: map[string]string{"/f": dir}}, wantErr: "not a regular file"},
		{name: "file over directory", spec: Spec{Name: "a/b:c", Files: map[string]string{"/a": f, "/a/b": f}}, wantErr: "both a file and a parent directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "img.tar")
			err := Build(context.Background(), tc.spec, out)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Build error = %v, want one containing %q", err, tc.wantErr)
			}
			if got := errors.Is(err, ErrInvalidSpec); got != tc.invalid {
				t.Errorf("errors.Is(err, ErrInvalidSpec) = %v, want %v", got, tc.invalid)
			}
			if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
				t.Errorf("a failed build left %s behind", out)
			}
		})
	}
}

func TestParseLDD(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    []string
		wantErr error
	}{
		{
			name: "dynamic executable",
			out: "\tlinux-vdso.so.1 (0x00007ffc6a5f1000)\n" +
				"\tlibselinux.so.1 => /lib/x86_64-linux-gnu/libselinux.so.1 (0x00007f1)\n" +
				"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f2)\n" +
				"\t/lib64/ld-linux-x86-64.so.2 (0x00007f3)\n",
			want: []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libselinux.so.1", "/lib64/ld-linux-x86-64.so.2"},
		},
		{name: "static pie", out: "\tstatically linked\n", want: []string{}},
		{
			name:    "missing library",
			out:     "\tlibnvidia-ml.so.1 => not found\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x1)\n",
			wantErr: ErrMissingLibrary,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLDD(tc.out)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("parseLDD error = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				if !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
					t.Errorf("error %q does not name the missing library", err)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseLDD (-want +got):\n%s", diff)
			}
		})
	}
}

// compileC builds a C program with gcc, or skips the test when gcc is absent.
func compileC(t *testing.T, dir, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed: run scripts/install-deps.sh")
	}
	c := writeFile(t, filepath.Join(dir, "prog.c"), src, 0o644)
	bin := filepath.Join(dir, "prog")
	args := append(append([]string{}, flags...), "-o", bin, c, "-lm")
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	return bin
}

const mathProgram = `#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) { printf("%.1f\n", sqrt(atof(argc > 1 ? argv[1] : "0"))); return 0; }
`

// TestBuildWithSharedLibraries builds an image from a real dynamically linked
// program and checks that the layer carries its interpreter and libraries at
// the paths ldd reports, with the host files' contents; as root it also runs
// the program chrooted into the unpacked layer.
func TestBuildWithSharedLibraries(t *testing.T) {
	dir := t.TempDir()
	bin := compileC(t, dir, mathProgram)
	elfFile, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	var interp string
	for _, p := range elfFile.Progs {
		if p.Type == elf.PT_INTERP {
			b, _ := io.ReadAll(p.Open())
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	elfFile.Close()
	if interp == "" {
		t.Fatal("gcc produced a program without an interpreter; cannot test shared libraries")
	}

	libs, err := SharedLibraries(context.Background(), bin)
	if err != nil {
		t.Fatalf("SharedLibraries: %v", err)
	}
	var haveLibm, haveInterp bool
	for _, l := range libs {
		haveLibm = haveLibm || strings.Contains(filepath.Base(l), "libm.so")
		haveInterp = haveInterp || l == interp
	}
	if !haveLibm || !haveInterp {
		t.Fatalf("SharedLibraries = %v, want libm and the interpreter %s", libs, interp)
	}

	out := filepath.Join(dir, "img.tar")
	spec := Spec{Name: "drakit.dev/math:dev", Files: map[string]string{"/bin/math": bin}, Entrypoint: []string{"/bin/math"}, WithSharedLibraries: true}
	if err := Build(context.Background(), spec, out); err != nil {
		t.Fatalf("Build: %v", err)
	}
	layer := map[string]tarEntry{}
	for _, e := range readArchive(t, out).layer {
		layer["/"+strings.TrimSuffix(e.Name, "/")] = e
	}
	for _, l := range libs {
		host, err := os.ReadFile(l) // follows the host's symlinks, as Build does
		if err != nil {
			t.Fatal(err)
		}
		got, ok := layer[l]
		if !ok {
			t.Errorf("layer lacks %s", l)
			continue
		}
		if got.Type != tar.TypeReg || got.Content != string(host) {
			t.Errorf("layer %s: type %c, %d bytes; want the host file's %d bytes", l, got.Type, len(got.Content), len(host))
		}
	}

	// Without WithSharedLibraries only the program is copied.
	if err := Build(context.Background(), Spec{Name: "drakit.dev/math:dev", Files: map[string]string{"/bin/math": bin}}, out); err != nil {
		t.Fatal(err)
	}
	for _, e := range readArchive(t, out).layer {
		if e.Type == tar.TypeReg && e.Name != "bin/math" {
			t.Errorf("layer without shared libraries holds %s", e.Name)
		}
	}

	if os.Geteuid() != 0 {
		t.Log("not root: skipping the chroot run of the unpacked layer")
		return
	}
	if err := Build(context.Background(), spec, out); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "rootfs")
	unpackLayer(t, readArchive(t, out).members[layerName], root)
	cmd := exec.Command("/bin/math", "16")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	cmd.Dir = "/"
	got, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(got)) != "4.0" {
		t.Errorf("program in the unpacked layer: output %q, err %v; want 4.0", got, err)
	}
}

// unpackLayer extracts a layer (directories and regular files only).
func unpackLayer(t *testing.T, layer, root string) {
	t.Helper()
	tr := tar.NewReader(strings.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, _ := io.ReadAll(tr)
			if err := os.WriteFile(p, b, os.FileMode(h.Mode)&os.ModePerm); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("unexpected layer member type %c for %s", h.Typeflag, h.Name)
		}
	}
}

func TestSharedLibrariesOfNonDynamicFiles(t *testing.T) {
	dir := t.TempDir()
	script := writeFile(t, filepath.Join(dir, "s.sh"), "#!/bin/sh\n", 0o755)
	static := compileC(t, dir, mathProgram, "-static")
	for _, p := range []string{script, static} {
		libs, err := SharedLibraries(context.Background(), p)
		if err != nil || len(libs) != 0 {
			t.Errorf("SharedLibraries(%s) = %v, %v; want none", filepath.Base(p), libs, err)
		}
	}
}

func TestBuildPause(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed: run scripts/install-deps.sh")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "pause.tar")
	if err := BuildPause(context.Background(), out); err != nil {
		t.Fatalf("BuildPause: %v", err)
	}
	a := readArchive(t, out)
	if diff := cmp.Diff([]string{PauseImage}, a.manifest[0].RepoTags); diff != "" {
		t.Errorf("RepoTags (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/pause"}, a.config.Config.Entrypoint); diff != "" {
		t.Errorf("Entrypoint (-want +got):\n%s", diff)
	}
	var pause string
	for _, e := range a.layer {
		if e.Name == "pause" {
			pause = e.Content
			if e.Mode != 0o755 {
				t.Errorf("/pause mode %o, want 755", e.Mode)
			}
		}
	}
	bin := writeFile(t, filepath.Join(dir, "pause"), pause, 0o755)
	if dynamic, err := isDynamicELF(bin); err != nil || dynamic {
		t.Fatalf("/pause: dynamic=%v err=%v; want a static ELF program", dynamic, err)
	}

	// It runs until SIGTERM and then exits 0.
	cmd := exec.Command(bin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("pause exited on its own: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("pause after SIGTERM: %v, want exit status 0", err)
		}
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("pause did not exit within 5s of SIGTERM")
	}
}
