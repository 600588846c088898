package imex

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	"drakit.dev/drakit/internal/nvidiahw"
)

// ErrInvalidConfig classifies every error of Config.Validate.
var ErrInvalidConfig = errors.New("invalid IMEX controller configuration")

// Defaults.
const (
	DefaultDriverName  = "gpu.drakit.dev"
	DefaultDeviceClass = "imex.gpu.drakit.dev"
	// DefaultChannels is how many channels each clique's pool offers: the
	// conformance profiles' nodes have 8.
	DefaultChannels = 8
)

// Config configures the controller.
type Config struct {
	// DriverName is the GPU driver's name, whose node slices it reads and
	// whose name its pools carry.
	DriverName string
	// DeviceClass is the IMEX channel DeviceClass, the owner of the
	// published slices; it must exist.
	DeviceClass string
	// Channels is the number of channel devices per clique, 1..2048; every
	// node of the clique must have that many
	// /dev/nvidia-caps-imex-channels/channel<N>.
	Channels int
	// Kubeconfig is a kubeconfig file; empty: the in-cluster configuration.
	Kubeconfig string
}

// DefaultConfig is the configuration with every default.
func DefaultConfig() Config {
	return Config{DriverName: DefaultDriverName, DeviceClass: DefaultDeviceClass, Channels: DefaultChannels}
}

// Validate reports every problem of c.
func (c *Config) Validate() error {
	var errs []error
	for _, msg := range validation.IsDNS1123Subdomain(c.DriverName) {
		errs = append(errs, fmt.Errorf("driver name %q: %s", c.DriverName, msg))
	}
	for _, msg := range validation.IsDNS1123Subdomain(c.DeviceClass) {
		errs = append(errs, fmt.Errorf("device class %q: %s", c.DeviceClass, msg))
	}
	if c.Channels < 1 || c.Channels > nvidiahw.IMEXMaxChannels {
		errs = append(errs, fmt.Errorf("channels %d: must be 1..%d", c.Channels, nvidiahw.IMEXMaxChannels))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
