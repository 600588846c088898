package nvlink

// NVML values the NVML state file carries (package emulator/nvmlstate).

// NVMLVersion is the nvmlNvlinkVersion_t of NVLink generation v
// (NVML_NVLINK_VERSION_4_0 = 6 for NVLink 4), 0 for an unknown one.
func NVMLVersion(v int) uint32 {
	return map[int]uint32{1: 1, 2: 2, 3: 4, 4: 6, 5: 7}[v]
}

// FabricState is the nvmlGpuFabricState_t of a Domain state
// (NVML_GPU_FABRIC_STATE_COMPLETED = 3), and whether it is known.
func FabricState(s string) (uint8, bool) {
	v, ok := map[string]uint8{StateNotStarted: 1, StateInProgress: 2, StateCompleted: 3}[s]
	return v, ok
}
