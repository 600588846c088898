package nvmlstate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// GenerationRelativePath is the generation file below an emulator root,
// beside the state file (see "Generation file" in the package documentation).
const GenerationRelativePath = "run/drakit-emulator/nvml.generation"

// GenerationMagic opens the generation file: its format and version.
const GenerationMagic = "drkgen01"

// GenerationFileSize is the generation file's size: one page.
const GenerationFileSize = 4096

// generationOffset is where the counter lies, after the magic.
const generationOffset = len(GenerationMagic)

// BumpGeneration tells every NVML client of the emulator root that the state
// file changed: it adds one to the counter in root's generation file, with
// an atomic add on a shared mapping of the file, so concurrent writers never
// lose an increment. Every writer of the state file calls it after it
// renamed the new file into place, while it still holds the state lock
// where it takes one. A missing file is created, a short one extended with
// zeros and a wrong magic rewritten; the file is never truncated, replaced
// or removed, because readers map its inode.
func BumpGeneration(root string) error {
	path := filepath.Join(root, GenerationRelativePath)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		err = f.Chmod(0o644) // whatever the umask: every client reads it
	} else if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_RDWR, 0)
	}
	if err != nil {
		return fmt.Errorf("bump NVML generation %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("bump NVML generation %s: %w", path, err)
	}
	if fi.Size() < GenerationFileSize {
		if err := f.Truncate(GenerationFileSize); err != nil {
			return fmt.Errorf("bump NVML generation %s: extend: %w", path, err)
		}
	}
	m, err := unix.Mmap(int(f.Fd()), 0, GenerationFileSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("bump NVML generation %s: map: %w", path, err)
	}
	defer unix.Munmap(m) //nolint:errcheck // unmapping a mapping just made cannot fail
	if string(m[:generationOffset]) != GenerationMagic {
		copy(m, GenerationMagic)
	}
	atomic.AddUint64(counter(m), 1)
	return nil
}

// counter is the counter in a mapping of the generation file (page-aligned,
// so the counter is 8-byte aligned, as the atomic operations need).
func counter(m []byte) *uint64 {
	return (*uint64)(unsafe.Pointer(&m[generationOffset]))
}
