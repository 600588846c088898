package plaindriver

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// Paths and names inside containers.
const (
	// containerDeviceDir is where a device's directory is mounted in a
	// container: <containerDeviceDir>/<device>.
	containerDeviceDir = "/var/run/plain"
	cdiClass           = "claim"
)

// mountOptions mount a device's directory read-only, without set-uid
// programs, device nodes or executables.
var mountOptions = []string{"ro", "nosuid", "nodev", "noexec", "bind"}

// cdiSpecs writes and removes the per-claim CDI specs.
type cdiSpecs struct {
	dir      string
	vendor   string // k8s.<driver name>
	stateDir string // host path of the device directories' parent
	cache    *cdiapi.Cache
}

func newCDISpecs(dir, driverName, stateDir string) (*cdiSpecs, error) {
	vendor := "k8s." + driverName
	if err := parser.ValidateVendorName(vendor); err != nil {
		return nil, fmt.Errorf("derive CDI vendor from driver name %s: %w", driverName, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create CDI directory %s: %w", dir, err)
	}
	// Only WriteSpec and RemoveSpec are used: no watcher, no refresh.
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(dir), cdiapi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("create CDI cache for %s: %w", dir, err)
	}
	return &cdiSpecs{dir: dir, vendor: vendor, stateDir: stateDir, cache: cache}, nil
}

// specName is the file name (in the CDI directory) of a claim's spec,
// k8s.<driver>-claim_<claimUID>.json.
func (c *cdiSpecs) specName(claimUID string) string {
	return cdiapi.GenerateTransientSpecName(c.vendor, cdiClass, claimUID) + ".json"
}

// specPath is the host path of a claim's spec.
func (c *cdiSpecs) specPath(claimUID string) string {
	return filepath.Join(c.dir, c.specName(claimUID))
}

// deviceID is the fully qualified CDI device ID of one device of a claim,
// k8s.<driver>/claim=<claimUID>-<device>.
func (c *cdiSpecs) deviceID(claimUID, device string) string {
	return parser.QualifiedName(c.vendor, cdiClass, claimUID+"-"+device)
}

// edits is what one device injects: PLAIN_DEVICE_<index>=<name>,
// PLAIN_DEVICE_<index>_SERIAL=<serial> and its directory mounted read-only
// at /var/run/plain/<name>.
func (c *cdiSpecs) edits(d device) cdispec.ContainerEdits {
	env := "PLAIN_DEVICE_" + strconv.Itoa(d.Index)
	return cdispec.ContainerEdits{
		Env: []string{env + "=" + d.Name, env + "_SERIAL=" + d.Serial},
		Mounts: []*cdispec.Mount{{
			HostPath:      deviceDir(c.stateDir, d.Name),
			ContainerPath: path.Join(containerDeviceDir, d.Name),
			Options:       slices.Clone(mountOptions),
		}},
	}
}

// spec builds a claim's spec: one CDI device <claimUID>-<name> per device of
// devs (not empty, no device twice) with that device's edits. A non-nil
// extra (DefectExtraDevice) adds the edits of that device to the first
// CDI device.
func (c *cdiSpecs) spec(claimUID string, devs []device, extra *device) (*cdispec.Spec, error) {
	spec := &cdispec.Spec{Kind: c.vendor + "/" + cdiClass}
	for i, d := range devs {
		edits := c.edits(d)
		if i == 0 && extra != nil {
			x := c.edits(*extra)
			edits.Env = append(edits.Env, x.Env...)
			edits.Mounts = append(edits.Mounts, x.Mounts...)
		}
		spec.Devices = append(spec.Devices, cdispec.Device{Name: claimUID + "-" + d.Name, ContainerEdits: edits})
	}
	v, err := cdispec.MinimumRequiredVersion(spec)
	if err != nil {
		return nil, fmt.Errorf("determine CDI version of the spec of claim %s: %w", claimUID, err)
	}
	spec.Version = v
	return spec, nil
}

// write writes (or overwrites, atomically) the claim's spec.
func (c *cdiSpecs) write(claimUID string, devs []device, extra *device) error {
	spec, err := c.spec(claimUID, devs, extra)
	if err != nil {
		return err
	}
	if err := c.cache.WriteSpec(spec, c.specName(claimUID)); err != nil {
		return fmt.Errorf("write CDI spec %s: %w", c.specPath(claimUID), err)
	}
	return nil
}

// remove deletes the claim's spec; a missing spec is not an error.
func (c *cdiSpecs) remove(claimUID string) error {
	if err := c.cache.RemoveSpec(c.specName(claimUID)); err != nil {
		return fmt.Errorf("remove CDI spec %s: %w", c.specPath(claimUID), err)
	}
	return nil
}
