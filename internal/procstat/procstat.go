package procstat

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Exited reports whether pid is gone or a zombie (or dead).
func Exited(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	state := State(stat)
	return state == "" || state == "Z" || state == "X"
}

// State returns the state field of a /proc/<pid>/stat line, "pid (comm)
// state ...", where comm may hold spaces and parentheses; "" when there is
// none. The kernel separates the fields with ASCII white space; other
// Unicode spaces (U+0085, U+00A0) are field bytes.
func State(stat []byte) string {
	fields := strings.FieldsFunc(string(stat[bytes.LastIndexByte(stat, ')')+1:]), isASCIISpace)
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

// isASCIISpace reports whether r is ASCII white space.
func isASCIISpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}
