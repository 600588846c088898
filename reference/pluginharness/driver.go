package pluginharness

import (
	"context"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// Driver is what a driver implements for one kind of device; the package
// documentation states each method's contract. D is the driver's
// checkpointed record of a prepared device, a struct embedding
// PreparedDevice.
type Driver[D any] interface {
	// Discover returns what the driver publishes: one pool named after
	// the node. prepared are the claims the checkpoint held at start,
	// before unfinished prepares were undone (hardware they name may
	// still have been there when the driver looked).
	Discover(ctx context.Context, prepared map[string]Claim[D]) (resourceslice.DriverResources, error)
	// Admit returns an error when the device may not be prepared as
	// allocated (adminAccess: the result has admin access).
	Admit(device string, adminAccess bool) error
	// Prepare does to the hardware what the claim's devices need, records
	// it in claim and calls save to checkpoint the claim as it stands.
	Prepare(ctx context.Context, uid string, claim *Claim[D], save func() error) error
	// Edits returns the CDI container edits of a prepared claim.
	Edits(ctx context.Context, uid string, claim Claim[D]) (Edits, error)
	// Unprepare undoes what Prepare did for the claim; what is already
	// undone, or was never done, is success.
	Unprepare(ctx context.Context, uid string, claim Claim[D]) error
}

// PoolAdmitter is implemented by a driver whose claims may name devices of
// pools other than the node's: multi-node devices that a cluster-level
// controller of the driver publishes (IMEX channels). Prepare hands such a
// result to AdmitPool instead of refusing it; nil means the device may be
// prepared on this node, and the driver's Prepare and Edits then see it
// with its pool. Conflicts between claims are checked for the node's pool
// only: the controller's pools are shared by their nodes.
type PoolAdmitter interface {
	AdmitPool(pool, device string) error
}

// PreparedDevice is one allocation result of a prepared claim for this
// driver, as the checkpoint records it: enough to answer a repeated prepare
// and to find conflicts.
//
// A result with a share ID (a share of a device that allows multiple
// allocations, KEP-5075) records it and the capacity it consumes; such a
// result never conflicts with another claim's: the scheduler keeps the
// shares of a device within its capacity.
type PreparedDevice struct {
	Request          string                                          `json:"request"`
	Pool             string                                          `json:"pool"`
	Device           string                                          `json:"device"`
	AdminAccess      bool                                            `json:"adminAccess,omitempty"`
	ShareID          string                                          `json:"shareID,omitempty"`
	ConsumedCapacity map[resourceapi.QualifiedName]resource.Quantity `json:"consumedCapacity,omitempty"`
	CDIDeviceIDs     []string                                        `json:"cdiDeviceIDs"`
}

func (d *PreparedDevice) prepared() *PreparedDevice { return d }

// Record is the constraint on a driver's device record D: *D must be a
// pointer to a struct that embeds PreparedDevice (or to PreparedDevice).
type Record[D any] interface {
	*D
	prepared() *PreparedDevice
}

// Claim is what the checkpoint holds for a prepared claim.
type Claim[D any] struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Devices   []D    `json:"devices"`
	// Incomplete marks a claim whose prepare is changing the hardware: it
	// is not prepared yet, and a restarted driver undoes what its devices
	// record.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Edits are the CDI container edits of a prepared claim.
type Edits struct {
	// Claim are the spec's own edits, which every CDI device of the spec
	// gets.
	Claim cdispec.ContainerEdits
	// Devices are the CDI devices, one per published device, each device
	// once.
	Devices []DeviceEdits
}

// DeviceEdits are one CDI device's edits; the CDI device is named
// <claimUID>-<Device>.
type DeviceEdits struct {
	Device string
	Edits  cdispec.ContainerEdits
}
