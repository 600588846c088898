package pluginharness

import (
	"fmt"
	"os"
	"path/filepath"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// cdiClass is the CDI class of the per-claim specs.
const cdiClass = "claim"

// specs writes and removes the per-claim CDI specs.
type specs struct {
	dir    string
	vendor string // k8s.<driver name>
	cache  *cdiapi.Cache
}

// newSpecs derives the CDI vendor from the driver name and creates dir.
func newSpecs(dir, driverName string) (*specs, error) {
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
	return &specs{dir: dir, vendor: vendor, cache: cache}, nil
}

// kind is the specs' kind, k8s.<driver>/claim.
func (s *specs) kind() string { return s.vendor + "/" + cdiClass }

// name is the file name (in the CDI directory) of a claim's spec,
// k8s.<driver>-claim_<claimUID>.json.
func (s *specs) name(claimUID string) string {
	return cdiapi.GenerateTransientSpecName(s.vendor, cdiClass, claimUID) + ".json"
}

// path is the host path of a claim's spec.
func (s *specs) path(claimUID string) string { return filepath.Join(s.dir, s.name(claimUID)) }

// deviceID is the fully qualified CDI device ID of one device of a claim,
// k8s.<driver>/claim=<claimUID>-<device>.
func (s *specs) deviceID(claimUID, device string) string {
	return parser.QualifiedName(s.vendor, cdiClass, claimUID+"-"+device)
}

// spec builds a claim's spec from its edits (at least one device, none
// twice).
func (s *specs) spec(claimUID string, e Edits) (*cdispec.Spec, error) {
	spec := &cdispec.Spec{Kind: s.kind(), ContainerEdits: e.Claim}
	for _, d := range e.Devices {
		spec.Devices = append(spec.Devices, cdispec.Device{Name: claimUID + "-" + d.Device, ContainerEdits: d.Edits})
	}
	v, err := cdispec.MinimumRequiredVersion(spec)
	if err != nil {
		return nil, fmt.Errorf("determine CDI version of the spec of claim %s: %w", claimUID, err)
	}
	spec.Version = v
	return spec, nil
}

// write writes (or overwrites, atomically) the claim's spec.
func (s *specs) write(claimUID string, e Edits) error {
	spec, err := s.spec(claimUID, e)
	if err != nil {
		return err
	}
	if err := s.cache.WriteSpec(spec, s.name(claimUID)); err != nil {
		return fmt.Errorf("write CDI spec %s: %w", s.path(claimUID), err)
	}
	return nil
}

// remove deletes the claim's spec; a missing spec is not an error.
func (s *specs) remove(claimUID string) error {
	if err := s.cache.RemoveSpec(s.name(claimUID)); err != nil {
		return fmt.Errorf("remove CDI spec %s: %w", s.path(claimUID), err)
	}
	return nil
}
