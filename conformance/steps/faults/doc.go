// Package faults holds the steps of hardware faults and what a driver and
// the cluster do about them (features/kep-4680-device-health,
// features/kep-5055-device-taints): the faults the kit injects under a
// device through the driver's declared fault command, the health the
// driver reports (KEP-4680), the taints it puts on the device, the
// DeviceTaintRules the scenarios create and the evictions that follow
// (KEP-5055), and the NVML state lock the kit holds to catch a driver
// mid-change.
package faults
