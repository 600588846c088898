package kit

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"drakit.dev/drakit/conformance/observe"
)

// kubeletDRAStateFile is where the kubelet's DRA manager checkpoints, for
// every prepared claim, what each driver's NodePrepareResources returned: the
// devices and their CDI device IDs (k8s.io/kubernetes pkg/kubelet/cm/dra,
// checkpoint.dra.kubelet.k8s.io/v1, below the kubelet's root dir).
const kubeletDRAStateFile = "dra_manager_state"

// kubeletCheckpointAPIVersion is the checkpoint format the kit reads.
const kubeletCheckpointAPIVersion = "checkpoint.dra.kubelet.k8s.io/v1"

// preparedClaim is one claim as the kubelet recorded its preparation.
type PreparedClaim struct {
	ClaimUID  string
	ClaimName string
	Namespace string
	// DriverState holds, per driver, what its NodePrepareResources
	// returned.
	DriverState map[string]struct {
		Devices []observe.PreparedDevice
	}
}

// readKubeletDRAState reads the kubelet's DRA checkpoint below its root dir,
// checking its checksum and version, and returns the prepared claims by UID.
func ReadKubeletDRAState(kubeletRootDir string) (map[string]PreparedClaim, error) {
	path := filepath.Join(kubeletRootDir, kubeletDRAStateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]PreparedClaim{}, nil // nothing prepared yet
	}
	if err != nil {
		return nil, fmt.Errorf("read the kubelet's DRA state: %w", err)
	}
	var cp struct {
		Data     string
		Checksum uint32
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("parse the kubelet's DRA state %s: %w", path, err)
	}
	if sum := crc32.ChecksumIEEE([]byte(cp.Data)); sum != cp.Checksum {
		return nil, fmt.Errorf("the kubelet's DRA state %s: checksum %d, its data sums to %d (written while read? read again)", path, cp.Checksum, sum)
	}
	var data struct {
		APIVersion         string `json:"apiVersion"`
		ClaimInfoStateList []PreparedClaim
	}
	if err := json.Unmarshal([]byte(cp.Data), &data); err != nil {
		return nil, fmt.Errorf("parse the kubelet's DRA state %s: %w", path, err)
	}
	if data.APIVersion != kubeletCheckpointAPIVersion {
		return nil, fmt.Errorf("the kubelet's DRA state %s has version %q; the kit reads %s", path, data.APIVersion, kubeletCheckpointAPIVersion)
	}
	claims := make(map[string]PreparedClaim, len(data.ClaimInfoStateList))
	for _, c := range data.ClaimInfoStateList {
		claims[c.ClaimUID] = c
	}
	return claims, nil
}
