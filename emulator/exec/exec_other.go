//go:build !linux

package exec

import (
	"context"
	"errors"
)

// ErrNotPermitted is returned when the mount namespace cannot be set up for
// want of privilege: Run needs root (CAP_SYS_ADMIN).
var ErrNotPermitted = errors.New("emulator exec needs root (CAP_SYS_ADMIN) to create a mount namespace")

// Run needs Linux mount namespaces; elsewhere it fails.
func Run(ctx context.Context, cfg Config, command Command) error {
	return errors.New("emulator exec needs Linux mount namespaces")
}
