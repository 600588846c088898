package driver

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/internal/nvidiahw"
)

const (
	noSchedule = resourceapi.DeviceTaintEffectNoSchedule
	noExecute  = resourceapi.DeviceTaintEffectNoExecute
)

// TestRecoveryEffect is the documented table: NONE no taint, the drains
// NoSchedule, resets and reboots NoExecute.
func TestRecoveryEffect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		action nvml.DeviceGpuRecoveryAction
		value  string
		effect resourceapi.DeviceTaintEffect
	}{
		{nvml.GPU_RECOVERY_ACTION_NONE, "", ""},
		{nvml.GPU_RECOVERY_ACTION_DRAIN_P2P, "drain-p2p", noSchedule},
		{nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET, "drain-and-reset", noSchedule},
		{nvml.GPU_RECOVERY_ACTION_GPU_RESET, "gpu-reset", noExecute},
		{nvml.GPU_RECOVERY_ACTION_NODE_REBOOT, "node-reboot", noExecute},
		{nvml.GPU_RECOVERY_ACTION_BUS_RESET, "bus-reset", noExecute},
		{nvml.GPU_RECOVERY_ACTION_SYSTEM_REBOOT, "system-reboot", noExecute},
		{nvml.GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN, "action-5", noSchedule},
	} {
		value, effect := recoveryEffect(tc.action)
		if value != tc.value || effect != tc.effect {
			t.Errorf("recovery action %d: %q %q, want %q %q", tc.action, value, effect, tc.value, tc.effect)
		}
	}
}

// TestXidEffect: application Xids never taint; a device Xid takes the
// effect of the recovery action NVML gives, or the fallback table when it
// gives none.
func TestXidEffect(t *testing.T) {
	t.Parallel()
	fallback := map[uint64]resourceapi.DeviceTaintEffect{
		13: "", 31: "", 43: "", 45: "", 68: "", 109: "",
		48: noExecute, 64: noExecute, 79: noExecute, 95: noExecute, 119: noExecute, 120: noExecute,
		63: noSchedule, 74: noSchedule, 92: noSchedule, 94: noSchedule,
		200: noSchedule, // outside the catalogue: a device Xid
	}
	for _, x := range nvidiahw.Xids {
		if _, ok := fallback[x.Code]; !ok {
			t.Errorf("Xid %d of the catalogue is not in this test's table", x.Code)
		}
	}
	for code, want := range fallback {
		if got := xidEffect(code, 0, false); got != want {
			t.Errorf("Xid %d without a recovery action: %q, want %q", code, got, want)
		}
		// A known recovery action decides for device Xids.
		wantKnown := resourceapi.DeviceTaintEffect("")
		if want != "" {
			wantKnown = noSchedule
		}
		if got := xidEffect(code, nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET, true); got != wantKnown {
			t.Errorf("Xid %d with recovery action drain-and-reset: %q, want %q", code, got, wantKnown)
		}
		if got := xidEffect(code, nvml.GPU_RECOVERY_ACTION_NONE, true); got != "" {
			t.Errorf("Xid %d with recovery action none: %q, want no taint", code, got)
		}
	}
}

// TestEvaluate: health, message and taints of one device from its fault
// state.
func TestEvaluate(t *testing.T) {
	t.Parallel()
	taint := func(key, value string, effect resourceapi.DeviceTaintEffect) resourceapi.DeviceTaint {
		return resourceapi.DeviceTaint{Key: testDriver + "/" + key, Value: value, Effect: effect}
	}
	healthy, unhealthy := kubeletplugin.HealthStatusHealthy, kubeletplugin.HealthStatusUnhealthy
	for _, tc := range []struct {
		name   string
		faults gpuFaults
		xids   []xidFault
		want   deviceStatus
	}{
		{"healthy", gpuFaults{}, nil, deviceStatus{Health: healthy}},
		{"recovery action none", gpuFaults{RecoveryKnown: true}, nil, deviceStatus{Health: healthy}},
		{"lost", gpuFaults{Lost: true}, nil, deviceStatus{Health: unhealthy, Withdrawn: true,
			Message: "GPU is lost (NVML: GPU is lost; Xid 79 (GPU has fallen off the bus)): reseat or replace the GPU; reboot the node"}},
		{"two Xids, the NoExecute one taints", gpuFaults{}, []xidFault{{74, noSchedule}, {119, noExecute}, {63, noSchedule}},
			deviceStatus{Health: unhealthy,
				Message: "Xid 74 (NVLink Error): reset the GPU; check the NVLink connection; Xid 119 (GSP RPC Timeout): reset the GPU; " +
					"Xid 63 (ECC page retirement or row remapping recording event): reset the GPU when idle to apply the remapping",
				Taints: []resourceapi.DeviceTaint{taint("xid", "119", noExecute)}}},
		{"drain and reset", gpuFaults{Recovery: nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET, RecoveryKnown: true}, nil,
			deviceStatus{Health: unhealthy, Message: "NVML recovery action: drain-and-reset",
				Taints: []resourceapi.DeviceTaint{taint("recovery-action", "drain-and-reset", noSchedule)}}},
		{"row remap failure beats DBE", gpuFaults{RemapFailure: true, DoubleBitECC: 3}, nil,
			deviceStatus{Health: unhealthy, Message: "row remapping failed: replace the GPU",
				Taints: []resourceapi.DeviceTaint{taint("memory", "row-remap-failure", noSchedule)}}},
		{"double-bit ECC", gpuFaults{DoubleBitECC: 3}, nil,
			deviceStatus{Health: unhealthy, Message: "3 uncorrectable (double-bit) ECC errors since the last reset: reset the GPU",
				Taints: []resourceapi.DeviceTaint{taint("memory", "double-bit-ecc", noSchedule)}}},
		{"remap pending stays healthy", gpuFaults{PagesPending: true}, nil,
			deviceStatus{Health: healthy, Message: "memory page retirement or row remapping pending: reset the GPU when idle",
				Taints: []resourceapi.DeviceTaint{taint("memory", "remap-pending", noSchedule)}}},
		{"slowdown is informational", gpuFaults{Clocks: nvml.ClocksThrottleReasonHwSlowdown | nvml.ClocksEventReasonSwThermalSlowdown | nvml.ClocksEventReasonGpuIdle}, nil,
			deviceStatus{Health: healthy, Message: "clocks slowed down: hw-slowdown, sw-thermal-slowdown",
				Taints: []resourceapi.DeviceTaint{taint("slowdown", "hw-slowdown", resourceapi.DeviceTaintEffectNone)}}},
	} {
		if diff := cmp.Diff(tc.want, evaluate(testDriver, tc.faults, tc.xids)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
