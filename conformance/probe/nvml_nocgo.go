//go:build !cgo

package probe

import "errors"

// DefaultNVMLLibrary is the library name NVML is loaded from.
const DefaultNVMLLibrary = "libnvidia-ml.so.1"

// errNoCgo is what every NVML call reports in a build without cgo: go-nvml
// loads the library with dlopen, which needs cgo.
var errNoCgo = errors.New("NVML unavailable: the probe was built without cgo")

// NewNVML returns a library whose Init always fails, because this build
// cannot load shared libraries.
func NewNVML(string) Library { return noNVML{} }

type noNVML struct{}

func (noNVML) Init() error                    { return errNoCgo }
func (noNVML) Shutdown() error                { return errNoCgo }
func (noNVML) DriverVersion() (string, error) { return "", errNoCgo }
func (noNVML) Count() (int, error)            { return 0, errNoCgo }
func (noNVML) GPU(int) (GPU, error)           { return GPU{}, errNoCgo }
