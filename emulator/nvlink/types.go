package nvlink

// Fabric is spec.nvlink of a node profile.
type Fabric struct {
	// Version is the NVLink generation: 4 for H100 (NVLink 4), 5 for
	// B200/GB200 (NVLink 5).
	Version int `json:"version"`
	// LinksPerGPU is the number of active NVLinks of each GPU (18 on H100
	// SXM and on GB200).
	LinksPerGPU int `json:"linksPerGPU"`
	// NVSwitches is the number of NVSwitch chips on this node, visible as
	// PCI bridge devices (vendor 0x10de, class 0x068000). With NVSwitches the
	// GPUs of the node are connected all-to-all through them; 0 where the
	// switches sit outside the node (an NVL72 rack's switch trays) or where
	// the node has none.
	NVSwitches int `json:"nvswitches,omitempty"`
	// Domain is set when the node's GPUs are part of a multi-node NVLink
	// domain; nil for a node whose NVLink ends at the node.
	Domain *Domain `json:"domain,omitempty"`
	// IMEXChannels is the number of IMEX channel device nodes
	// (/dev/nvidia-caps-imex-channels/channel<N>) the node exposes; 0: none.
	IMEXChannels int `json:"imexChannels,omitempty"`
}

// Domain is a GPU's multi-node NVLink fabric membership, as
// nvmlDeviceGetGpuFabricInfoV reports it.
type Domain struct {
	// ClusterUUID is the NVLink domain's UUID (RFC 4122 text form).
	ClusterUUID string `json:"clusterUUID"`
	// CliqueID is the clique within the domain: GPUs of one clique can
	// reach each other over NVLink.
	CliqueID uint32 `json:"cliqueID"`
	// State is the GPU's fabric registration state: completed (default),
	// in-progress or not-started.
	State string `json:"state,omitempty"`
}
