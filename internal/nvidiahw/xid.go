package nvidiahw

import (
	"fmt"
	"slices"
)

// XidKind says whom an Xid error blames, after NVIDIA's "Xid Errors"
// catalogue (docs.nvidia.com/deploy/xid-errors): an application's own bug,
// or the device (its memory, its bus, its firmware, its links).
type XidKind string

const (
	// XidApplication errors are caused by the application running on the
	// GPU (a bad memory access, a kernel exception, a timeout): the GPU is
	// fine and NVIDIA's device plugin and DRA driver ignore them by default.
	XidApplication XidKind = "application"
	// XidDevice errors are faults of the GPU itself.
	XidDevice XidKind = "device"
)

// Xid is one Xid error as the NVIDIA kernel driver reports it (in the
// kernel log as "NVRM: Xid (PCI:…): <Code>, …" and to NVML clients as an
// nvmlEventTypeXidCriticalError event whose eventData is Code).
type Xid struct {
	Code uint64
	// Name is NVIDIA's short name of the error.
	Name string
	Kind XidKind
	// Action is what NVIDIA's catalogue tells an operator to do.
	Action string
}

// Xids are the Xid errors the emulator injects by name and the reference
// driver classifies, in code order. NVIDIA's DRA driver and device plugin
// skip 13, 31, 43, 45, 68 and 109 as application errors
// (applicationErrorXids in NVIDIA/k8s-device-plugin's health checker).
var Xids = []Xid{
	{13, "Graphics Engine Exception", XidApplication, "debug the application"},
	{31, "GPU memory page fault", XidApplication, "debug the application (illegal address)"},
	{43, "GPU stopped processing", XidApplication, "none: the application was stopped (e.g. killed)"},
	{45, "Preemptive cleanup, due to previous errors", XidApplication, "none: the channel was torn down"},
	{48, "Double Bit ECC Error", XidDevice, "reset the GPU"},
	{63, "ECC page retirement or row remapping recording event", XidDevice, "reset the GPU when idle to apply the remapping"},
	{64, "ECC page retirement or row remapper recording failure", XidDevice, "reset the GPU; replace it if it recurs"},
	{68, "NVDEC0 Exception", XidApplication, "debug the application"},
	{74, "NVLink Error", XidDevice, "reset the GPU; check the NVLink connection"},
	{79, "GPU has fallen off the bus", XidDevice, "reseat or replace the GPU; reboot the node"},
	{92, "High single-bit ECC error rate", XidDevice, "reset the GPU; replace it if it recurs"},
	{94, "Contained ECC error", XidDevice, "restart the affected application; reset the GPU when convenient"},
	{95, "Uncontained ECC error", XidDevice, "reset the GPU: every application on it is affected"},
	{109, "Context Switch Timeout Error", XidApplication, "debug the application"},
	{119, "GSP RPC Timeout", XidDevice, "reset the GPU"},
	{120, "GSP Error", XidDevice, "reset the GPU"},
}

// LookupXid returns the catalogue entry of code.
func LookupXid(code uint64) (Xid, bool) {
	i, ok := slices.BinarySearchFunc(Xids, code, func(x Xid, c uint64) int {
		switch {
		case x.Code < c:
			return -1
		case x.Code > c:
			return 1
		}
		return 0
	})
	if !ok {
		return Xid{}, false
	}
	return Xids[i], true
}

// DescribeXid is "Xid 79 (GPU has fallen off the bus)", or "Xid 200" for a
// code outside the catalogue.
func DescribeXid(code uint64) string {
	if x, ok := LookupXid(code); ok {
		return fmt.Sprintf("Xid %d (%s)", code, x.Name)
	}
	return fmt.Sprintf("Xid %d", code)
}
