package driver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// Paths inside containers (docs/architecture.md).
const (
	containerNVMLPath  = "/usr/lib/x86_64-linux-gnu/" + NVMLLibraryName
	containerStatePath = "/run/drakit-emulator/nvml.state"
	cdiClass           = "claim"
)

// cdiSpecs writes and removes the per-claim CDI specs.
type cdiSpecs struct {
	dir        string
	vendor     string // k8s.<driver name>
	driverRoot string // host path
	nvmlLib    string // host path of the real NVML library file
	cache      *cdiapi.Cache
}

func newCDISpecs(dir, driverName, driverRoot, nvmlLib string) (*cdiSpecs, error) {
	vendor := "k8s." + driverName
	if err := parser.ValidateVendorName(vendor); err != nil {
		return nil, fmt.Errorf("derive CDI vendor from driver name %s: %w", driverName, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create CDI directory: %w", err)
	}
	// Only WriteSpec/RemoveSpec are used: no watcher, no refresh needed.
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(dir), cdiapi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("create CDI cache for %s: %w", dir, err)
	}
	return &cdiSpecs{dir: dir, vendor: vendor, driverRoot: driverRoot, nvmlLib: nvmlLib, cache: cache}, nil
}

// kind is the spec kind, k8s.<driver name>/claim.
func (c *cdiSpecs) kind() string { return c.vendor + "/" + cdiClass }

// specName is the file name (in the CDI directory) of a claim's spec.
func (c *cdiSpecs) specName(claimUID string) string {
	return cdiapi.GenerateTransientSpecName(c.vendor, cdiClass, claimUID) + ".json"
}

// deviceID is the fully qualified CDI device ID of one device of a claim.
func (c *cdiSpecs) deviceID(claimUID, device string) string {
	return parser.QualifiedName(c.vendor, cdiClass, claimUID+"-"+device)
}

// envName is DRAKIT_DEVICE_<DEVICE>: upper case, '-' → '_'.
func envName(device string) string {
	return "DRAKIT_DEVICE_" + strings.ToUpper(strings.ReplaceAll(device, "-", "_"))
}

// cdiDevice is what one prepared device injects: its device nodes (paths
// below /dev, e.g. "nvidia0", "nvidia-caps/nvidia-cap12") and the UUID its
// DRAKIT_DEVICE_<DEVICE> variable carries.
type cdiDevice struct {
	name  string // published device name
	uuid  string // GPU-… or MIG-…
	nodes []string
}

// spec builds a claim's spec; devs must not be empty and not repeat a device.
func (c *cdiSpecs) spec(claimUID string, devs []cdiDevice) (*cdispec.Spec, error) {
	spec := &cdispec.Spec{
		Kind: c.kind(),
		ContainerEdits: cdispec.ContainerEdits{
			DeviceNodes: []*cdispec.DeviceNode{{
				Path:     "/dev/nvidiactl",
				HostPath: filepath.Join(c.driverRoot, "dev", "nvidiactl"),
			}},
			Mounts: []*cdispec.Mount{{
				HostPath:      c.nvmlLib,
				ContainerPath: containerNVMLPath,
				Options:       []string{"ro", "nosuid", "nodev", "bind"},
			}},
		},
	}
	// The state file exists only below an emulator root. Its directory is
	// mounted, not the file: the emulator replaces the file by renaming a
	// new one over it, which a file bind mount would not show to a running
	// container.
	state := filepath.Join(c.driverRoot, containerStatePath)
	switch _, err := os.Stat(state); {
	case err == nil:
		spec.ContainerEdits.Mounts = append(spec.ContainerEdits.Mounts, &cdispec.Mount{
			HostPath:      filepath.Dir(state),
			ContainerPath: path.Dir(containerStatePath),
			Options:       []string{"ro", "nosuid", "nodev", "bind"},
		})
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("stat NVML state file: %w", err)
	}
	for _, d := range devs {
		edits := cdispec.ContainerEdits{Env: []string{envName(d.name) + "=" + d.uuid}}
		for _, n := range d.nodes {
			edits.DeviceNodes = append(edits.DeviceNodes, &cdispec.DeviceNode{
				Path:     "/dev/" + n,
				HostPath: filepath.Join(c.driverRoot, "dev", filepath.FromSlash(n)),
			})
		}
		spec.Devices = append(spec.Devices, cdispec.Device{Name: claimUID + "-" + d.name, ContainerEdits: edits})
	}
	v, err := cdispec.MinimumRequiredVersion(spec)
	if err != nil {
		return nil, fmt.Errorf("determine CDI version: %w", err)
	}
	spec.Version = v
	return spec, nil
}

// write writes (or overwrites, atomically) the claim's spec.
func (c *cdiSpecs) write(claimUID string, devs []cdiDevice) error {
	spec, err := c.spec(claimUID, devs)
	if err != nil {
		return err
	}
	if err := c.cache.WriteSpec(spec, c.specName(claimUID)); err != nil {
		return fmt.Errorf("write CDI spec %s: %w", filepath.Join(c.dir, c.specName(claimUID)), err)
	}
	return nil
}

// remove deletes the claim's spec; a missing spec is not an error.
func (c *cdiSpecs) remove(claimUID string) error {
	if err := c.cache.RemoveSpec(c.specName(claimUID)); err != nil {
		return fmt.Errorf("remove CDI spec %s: %w", filepath.Join(c.dir, c.specName(claimUID)), err)
	}
	return nil
}
