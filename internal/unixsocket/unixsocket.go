package unixsocket

import "fmt"

// MaxSocketPath is the longest AF_UNIX socket path Linux accepts (108 bytes
// including the terminating NUL).
const MaxSocketPath = 107

// CheckSocketPath reports a socket path longer than MaxSocketPath with its
// length and the limit, before anything binds it: the kernel refuses it
// with no more than EINVAL ("bind: invalid argument"), and a driver that
// meets it at start crash-loops without saying which path is too long.
func CheckSocketPath(path string) error {
	if len(path) > MaxSocketPath {
		return fmt.Errorf("socket %s is %d bytes, %d over the %d-byte AF_UNIX limit", path, len(path), len(path)-MaxSocketPath, MaxSocketPath)
	}
	return nil
}
