package nvmlstate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// errGenerationFile classifies readGeneration's errors about a generation
// file that is not one (short, or without GenerationMagic).
var errGenerationFile = errors.New("not an NVML generation file")

// readGeneration returns the counter of root's generation file, as the shim
// reads it.
func readGeneration(root string) (uint64, error) {
	path := filepath.Join(root, GenerationRelativePath)
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read NVML generation %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("read NVML generation %s: %w", path, err)
	}
	if fi.Size() < int64(generationOffset+8) {
		return 0, fmt.Errorf("read NVML generation %s: %w: %d bytes", path, errGenerationFile, fi.Size())
	}
	m, err := unix.Mmap(int(f.Fd()), 0, generationOffset+8, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("read NVML generation %s: map: %w", path, err)
	}
	defer unix.Munmap(m) //nolint:errcheck // unmapping a mapping just made cannot fail
	if string(m[:generationOffset]) != GenerationMagic {
		return 0, fmt.Errorf("read NVML generation %s: %w: magic %q", path, errGenerationFile, m[:generationOffset])
	}
	return atomic.LoadUint64(counter(m)), nil
}

func generationRoot(t *testing.T) (root, path string) {
	t.Helper()
	root = t.TempDir()
	path = filepath.Join(root, GenerationRelativePath)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	return root, path
}

func TestBumpGenerationCreatesAndCounts(t *testing.T) {
	root, path := generationRoot(t)
	if _, err := readGeneration(root); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("readGeneration of a root without the file = %v, want ErrNotExist", err)
	}
	old := syscall.Umask(0o077)
	err := BumpGeneration(root)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != GenerationFileSize || fi.Mode().Perm() != 0o644 {
		t.Errorf("generation file: %d bytes, mode %v; want %d bytes, 0644 whatever the umask", fi.Size(), fi.Mode().Perm(), GenerationFileSize)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:len(GenerationMagic)]) != GenerationMagic {
		t.Errorf("file starts with %q, want the magic %q", b[:len(GenerationMagic)], GenerationMagic)
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	// Concurrent writers lose no increment, and the file keeps its inode
	// (readers map it).
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				if err := BumpGeneration(root); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if g, err := readGeneration(root); err != nil || g != 201 {
		t.Errorf("after 201 bumps: readGeneration = %d, %v; want 201", g, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Sys().(*syscall.Stat_t).Ino != ino {
		t.Errorf("the generation file was replaced (%v): readers would keep the old inode", err)
	}
}

func TestGenerationFileRepairedInPlace(t *testing.T) {
	for _, tc := range []struct {
		name, data string
	}{
		{"empty", ""},
		{"short", "drk"},
		{"wrong magic", "garbage!" + string(make([]byte, 100))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, path := generationRoot(t)
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := readGeneration(root); !errors.Is(err, errGenerationFile) {
				t.Errorf("readGeneration of a %s file = %v, want errGenerationFile", tc.name, err)
			}
			before, _ := os.Stat(path)
			if err := BumpGeneration(root); err != nil {
				t.Fatal(err)
			}
			if g, err := readGeneration(root); err != nil || g != 1 {
				t.Errorf("after one bump: readGeneration = %d, %v; want 1", g, err)
			}
			after, _ := os.Stat(path)
			if after.Sys().(*syscall.Stat_t).Ino != before.Sys().(*syscall.Stat_t).Ino || after.Size() != GenerationFileSize {
				t.Errorf("repair replaced the file or left it at %d bytes", after.Size())
			}
		})
	}
}

func TestBumpGenerationErrorNamesFile(t *testing.T) {
	root := t.TempDir() // no run/drakit-emulator directory
	err := BumpGeneration(root)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("BumpGeneration without the state directory = %v, want ErrNotExist", err)
	}
	if want := filepath.Join(root, GenerationRelativePath); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
}
