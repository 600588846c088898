package render

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// dumpTree lists every path below root, sorted, one entry per line:
//
//	d 0755 sys
//	f 0444 sys/…/vendor
//	  | 0x10de
//	l sys/bus/pci/devices/0000:18:00.0 -> ../../../devices/…
//	c 0666 dev/nvidia0 195:0
//
// File contents follow their entry, each line prefixed by "  | "; a last
// line without newline is marked; binary files show size and SHA-256.
func dumpTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		mode := fi.Mode()
		switch {
		case mode.IsDir():
			fmt.Fprintf(&b, "d %04o %s\n", mode.Perm(), rel)
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "l %s -> %s\n", rel, target)
		case mode&fs.ModeCharDevice != 0:
			rdev := fi.Sys().(*syscall.Stat_t).Rdev
			fmt.Fprintf(&b, "c %04o %s %d:%d\n", mode.Perm(), rel, unix.Major(rdev), unix.Minor(rdev))
		case mode.IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "f %04o %s\n", mode.Perm(), rel)
			writeContent(&b, data)
		default:
			fmt.Fprintf(&b, "? %v %s\n", mode, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("dump %s: %v", root, err)
	}
	return b.String()
}

func writeContent(b *strings.Builder, data []byte) {
	s := string(data)
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		fmt.Fprintf(b, "  binary, %d bytes, sha256 %x\n", len(data), sha256.Sum256(data))
		return
	}
	if s == "" {
		return
	}
	lines := strings.SplitAfter(s, "\n")
	for _, l := range lines {
		if l == "" {
			continue
		}
		if strings.HasSuffix(l, "\n") {
			fmt.Fprintf(b, "  | %s", l)
		} else {
			fmt.Fprintf(b, "  | %s\n  \\ no newline at end of file\n", l)
		}
	}
}
