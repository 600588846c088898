package interpose

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"drakit.dev/drakit/internal/unixsocket"
)

// ErrInvalidConfig classifies every error of Config.Validate.
var ErrInvalidConfig = errors.New("invalid interpose configuration")

// Config says where the interposer sits. drakit interpose maps its flags
// 1:1 onto it.
type Config struct {
	// DriverRegistrationSocket is the driver's registration socket in a
	// registration directory of its own (its kubelet registrar directory
	// pointed away from the kubelet's), e.g.
	// /var/lib/kubelet/plugins/gpu.drakit.dev-interposed/gpu.drakit.dev-reg.sock.
	// It or DriverRegistrarDir is required.
	DriverRegistrationSocket string
	// DriverRegistrarDir is the driver's registration directory, for a
	// driver whose socket names change: one with per-pod socket names
	// (kubeletplugin.RollingUpdate: <driver>-<pod UID>-reg.sock, or the
	// hashed names it falls back to, and dra-<pod UID>.sock) gets new ones
	// with every pod of its DaemonSet. The interposer follows the newest
	// socket there that serves the driver, across rolling updates.
	DriverRegistrarDir string
	// KubeletRegistrarDir is the kubelet's plugin registration directory,
	// where the interposer registers as <driver>-reg.sock.
	KubeletRegistrarDir string
	// Endpoint is the interposer's DRA socket, which the kubelet calls;
	// empty: interpose.sock beside the driver's endpoint.
	Endpoint string
	// Control is the control endpoint: a unix socket path, or
	// 127.0.0.1:PORT (loopback only; port 0 picks one). Empty: none.
	Control string
	// Records is a file the records are appended to as JSON lines; empty:
	// kept in memory only.
	Records string
	// RulesFile holds the rules armed at start (kind FaultRules).
	RulesFile string
	// DriverWait bounds the wait for the driver's registration socket to
	// appear and answer GetInfo.
	DriverWait time.Duration
}

// DefaultConfig returns the defaults: the kubelet's standard registration
// directory, a two-minute wait for the driver.
func DefaultConfig() Config {
	return Config{KubeletRegistrarDir: "/var/lib/kubelet/plugins_registry", DriverWait: 2 * time.Minute}
}

// Validate reports every problem of c, naming the flag; the error wraps
// ErrInvalidConfig.
func (c Config) Validate() error {
	var errs []error
	socket := func(flag, path string, required bool) {
		switch {
		case path == "" && required:
			errs = append(errs, fmt.Errorf("--%s: required", flag))
		case path == "":
		case !filepath.IsAbs(path):
			errs = append(errs, fmt.Errorf("--%s %q: want an absolute path", flag, path))
		default:
			if err := unixsocket.CheckSocketPath(path); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", flag, err))
			}
		}
	}
	switch {
	case c.DriverRegistrationSocket == "" && c.DriverRegistrarDir == "":
		errs = append(errs, errors.New("--driver-registration-socket or --driver-registrar-dir: one is required"))
	case c.DriverRegistrationSocket != "" && c.DriverRegistrarDir != "":
		errs = append(errs, errors.New("--driver-registration-socket and --driver-registrar-dir: give one, not both"))
	}
	socket("driver-registration-socket", c.DriverRegistrationSocket, false)
	socket("endpoint", c.Endpoint, false)
	// The driver's registration directory: the socket's, or the one given.
	flag, path, dir := "driver-registration-socket", c.DriverRegistrationSocket, filepath.Dir(c.DriverRegistrationSocket)
	if c.DriverRegistrarDir != "" {
		flag, path, dir = "driver-registrar-dir", c.DriverRegistrarDir, c.DriverRegistrarDir
		if !filepath.IsAbs(dir) {
			errs = append(errs, fmt.Errorf("--driver-registrar-dir %q: want an absolute path", dir))
		}
	}
	if c.KubeletRegistrarDir == "" || !filepath.IsAbs(c.KubeletRegistrarDir) {
		errs = append(errs, fmt.Errorf("--kubelet-registrar-dir %q: want an absolute path", c.KubeletRegistrarDir))
	} else if filepath.Clean(dir) == filepath.Clean(c.KubeletRegistrarDir) {
		errs = append(errs, fmt.Errorf("--%s %q: in the kubelet's registration directory, so the driver registers itself; "+
			"point the driver's registrar directory elsewhere", flag, path))
	}
	if c.Control != "" {
		if _, err := controlNetwork(c.Control); err != nil {
			errs = append(errs, fmt.Errorf("--control %q: %w", c.Control, err))
		}
	}
	if c.DriverWait <= 0 {
		errs = append(errs, fmt.Errorf("--driver-wait %s: must be positive", c.DriverWait))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// controlNetwork is the network of a control address: "unix" for an
// absolute socket path, "tcp" for 127.0.0.1:PORT; anything else is an
// error.
func controlNetwork(addr string) (string, error) {
	if strings.HasPrefix(addr, "/") {
		if err := unixsocket.CheckSocketPath(addr); err != nil {
			return "", err
		}
		return "unix", nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("want a unix socket path or 127.0.0.1:PORT: %w", err)
	}
	if host != "127.0.0.1" {
		return "", errors.New("want a unix socket path or 127.0.0.1:PORT (loopback only)")
	}
	return "tcp", nil
}
