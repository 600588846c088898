package driver

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/internal/nvidiahw"
)

// Taint keys, in the driver's domain (<driver>/<key>); see the package
// documentation for the policy.
const (
	taintXid            = "xid"
	taintRecoveryAction = "recovery-action"
	taintMemory         = "memory"
	taintSlowdown       = "slowdown"
)

// xidLost is the Xid of a GPU that fell off the bus; its catalogue action
// is what a lost GPU's message says.
const xidLost = 79

// gpuFaults is the persistent fault state of one GPU as NVML reports it.
// The zero value is a healthy GPU; a query NVML does not support leaves its
// field zero.
type gpuFaults struct {
	// Lost: a query returned ERROR_GPU_IS_LOST.
	Lost bool
	// Recovery is FI_DEV_GET_GPU_RECOVERY_ACTION; RecoveryKnown is false
	// when NVML could not tell.
	Recovery      nvml.DeviceGpuRecoveryAction
	RecoveryKnown bool
	// DoubleBitECC is the volatile uncorrected ECC error count.
	DoubleBitECC uint64
	// PagesPending: retired pages wait for a reset. RemapPending: remapped
	// rows wait for a reset; RemapFailure: a row could not be remapped.
	PagesPending, RemapPending, RemapFailure bool
	// Clocks are the clocks event reasons (slowdownReasons of them count).
	Clocks uint64
}

// reset reports whether nothing in f lasts until a GPU reset: the state
// a reset leaves.
func (f gpuFaults) reset() bool {
	return !f.Lost && (!f.RecoveryKnown || f.Recovery == nvml.GPU_RECOVERY_ACTION_NONE)
}

// recoveryActions names the GPU recovery actions as taint values, with the
// effect each implies.
var recoveryActions = map[nvml.DeviceGpuRecoveryAction]struct {
	value  string
	effect resourceapi.DeviceTaintEffect
}{
	nvml.GPU_RECOVERY_ACTION_GPU_RESET:       {"gpu-reset", resourceapi.DeviceTaintEffectNoExecute},
	nvml.GPU_RECOVERY_ACTION_NODE_REBOOT:     {"node-reboot", resourceapi.DeviceTaintEffectNoExecute},
	nvml.GPU_RECOVERY_ACTION_DRAIN_P2P:       {"drain-p2p", resourceapi.DeviceTaintEffectNoSchedule},
	nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET: {"drain-and-reset", resourceapi.DeviceTaintEffectNoSchedule},
	nvml.GPU_RECOVERY_ACTION_BUS_RESET:       {"bus-reset", resourceapi.DeviceTaintEffectNoExecute},
	nvml.GPU_RECOVERY_ACTION_SYSTEM_REBOOT:   {"system-reboot", resourceapi.DeviceTaintEffectNoExecute},
}

// recoveryEffect is the taint value and effect of a recovery action: none
// for NONE; an action this table does not know (e.g. RECOVER_IMEX_DOMAIN)
// is NoSchedule, named by its number.
func recoveryEffect(a nvml.DeviceGpuRecoveryAction) (string, resourceapi.DeviceTaintEffect) {
	if a == nvml.GPU_RECOVERY_ACTION_NONE {
		return "", ""
	}
	if r, ok := recoveryActions[a]; ok {
		return r.value, r.effect
	}
	return "action-" + strconv.Itoa(int(a)), resourceapi.DeviceTaintEffectNoSchedule
}

// xidNoExecute are the device Xids that, when NVML gives no recovery
// action, make the device NoExecute; other device Xids make it NoSchedule.
var xidNoExecute = map[uint64]bool{48: true, 64: true, 79: true, 95: true, 119: true, 120: true}

// xidEffect is the effect of an Xid event given the recovery action read
// right after it (known false: NVML gave none). Application Xids never
// taint; Xids outside the catalogue count as device Xids.
func xidEffect(code uint64, recovery nvml.DeviceGpuRecoveryAction, known bool) resourceapi.DeviceTaintEffect {
	if x, ok := nvidiahw.LookupXid(code); ok && x.Kind == nvidiahw.XidApplication {
		return ""
	}
	if known {
		_, effect := recoveryEffect(recovery)
		return effect
	}
	if xidNoExecute[code] {
		return resourceapi.DeviceTaintEffectNoExecute
	}
	return resourceapi.DeviceTaintEffectNoSchedule
}

// xidFault is a device Xid that taints a device until the GPU is reset.
type xidFault struct {
	Code   uint64
	Effect resourceapi.DeviceTaintEffect
}

// slowdownReasons are the clocks event reasons that make a slowdown taint,
// in the order the taint value is chosen.
var slowdownReasons = []struct {
	bit   uint64
	value string
}{
	{nvml.ClocksThrottleReasonHwSlowdown, "hw-slowdown"},
	{nvml.ClocksThrottleReasonHwThermalSlowdown, "hw-thermal-slowdown"},
	{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw-power-brake-slowdown"},
	{nvml.ClocksEventReasonSwThermalSlowdown, "sw-thermal-slowdown"},
}

// deviceStatus is what the health policy says about one device.
type deviceStatus struct {
	Health  kubeletplugin.HealthStatus
	Message string
	Taints  []resourceapi.DeviceTaint
	// Withdrawn: the device's GPU is lost; it is not published.
	Withdrawn bool
}

// evaluate applies the health policy to one device: its GPU's persistent
// faults f and the Xid faults that hit it (its GPU's and, for a MIG
// device, its own). driverName qualifies the taint keys.
func evaluate(driverName string, f gpuFaults, xids []xidFault) deviceStatus {
	st := deviceStatus{Health: kubeletplugin.HealthStatusHealthy}
	var msgs []string
	unhealthy := func(msg string) {
		st.Health = kubeletplugin.HealthStatusUnhealthy
		msgs = append(msgs, msg)
	}
	taint := func(key, value string, effect resourceapi.DeviceTaintEffect) {
		st.Taints = append(st.Taints, resourceapi.DeviceTaint{Key: driverName + "/" + key, Value: value, Effect: effect})
	}
	if f.Lost {
		st.Withdrawn = true
		x, _ := nvidiahw.LookupXid(xidLost)
		unhealthy(fmt.Sprintf("GPU is lost (NVML: GPU is lost; %s): %s", nvidiahw.DescribeXid(xidLost), x.Action))
	}
	// The most severe Xid taints; every one is in the message.
	var worst *xidFault
	for i, x := range xids {
		action := "reset the GPU"
		if c, ok := nvidiahw.LookupXid(x.Code); ok {
			action = c.Action
		}
		unhealthy(fmt.Sprintf("%s: %s", nvidiahw.DescribeXid(x.Code), action))
		if x.Effect != "" && (worst == nil || x.Effect == resourceapi.DeviceTaintEffectNoExecute) {
			worst = &xids[i]
		}
	}
	if worst != nil {
		taint(taintXid, strconv.FormatUint(worst.Code, 10), worst.Effect)
	}
	if f.RecoveryKnown {
		if value, effect := recoveryEffect(f.Recovery); effect != "" {
			unhealthy("NVML recovery action: " + value)
			taint(taintRecoveryAction, value, effect)
		}
	}
	switch {
	case f.RemapFailure:
		unhealthy("row remapping failed: replace the GPU")
		taint(taintMemory, "row-remap-failure", resourceapi.DeviceTaintEffectNoSchedule)
	case f.DoubleBitECC > 0:
		unhealthy(fmt.Sprintf("%d uncorrectable (double-bit) ECC errors since the last reset: reset the GPU", f.DoubleBitECC))
		taint(taintMemory, "double-bit-ecc", resourceapi.DeviceTaintEffectNoSchedule)
	case f.RemapPending || f.PagesPending:
		msgs = append(msgs, "memory page retirement or row remapping pending: reset the GPU when idle")
		taint(taintMemory, "remap-pending", resourceapi.DeviceTaintEffectNoSchedule)
	}
	var slow []string
	for _, r := range slowdownReasons {
		if f.Clocks&r.bit != 0 {
			slow = append(slow, r.value)
		}
	}
	if len(slow) > 0 {
		msgs = append(msgs, "clocks slowed down: "+strings.Join(slow, ", "))
		taint(taintSlowdown, slow[0], resourceapi.DeviceTaintEffectNone)
	}
	st.Message = strings.Join(msgs, "; ")
	return st
}
