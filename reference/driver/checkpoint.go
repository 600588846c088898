package driver

import "drakit.dev/drakit/reference/pluginharness"

// checkpointVersion is the only checkpoint format this driver reads.
const checkpointVersion = "drakit.dev/checkpoint/v1"

// ErrCorruptCheckpoint is returned when the checkpoint cannot be trusted: bad
// JSON, unknown version or checksum mismatch.
var ErrCorruptCheckpoint = pluginharness.ErrCorruptCheckpoint

// preparedClaim is what the driver remembers about a prepared claim; enough to
// unprepare it and to answer a repeated prepare. Incomplete marks a claim
// whose prepare is creating MIG devices: it is not prepared yet, and a
// restarted driver destroys what its records name.
type preparedClaim = pluginharness.Claim[preparedDevice]

// preparedDevice is one allocation result of a prepared claim, as the
// checkpoint records it.
type preparedDevice struct {
	pluginharness.PreparedDevice
	// MIG is the dynamic MIG device created for a partition device.
	MIG *migRecord `json:"mig,omitempty"`
}
