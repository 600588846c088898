package deploy

import "testing"

// The names the chart gives each kind's objects (its table
// drakit-driver.kinds), which the tests pin.
const (
	Namespace         = "drakit-system"
	Name              = "drakit-driver"
	IMEXName          = "drakit-imex-controller"
	NICNamespace      = "drakit-nic"
	NICName           = "drakit-nic-driver"
	CPUNamespace      = "drakit-cpu"
	CPUName           = "drakit-cpu-driver"
	TPUNamespace      = "drakit-tpu"
	TPUName           = "drakit-tpu-driver"
	TPUControllerName = "drakit-tpu-controller"
	PlainNamespace    = "drakit-plain"
	PlainName         = "drakit-plain-driver"
)

// Each kind's default HTTP port.
const (
	DefaultHTTPPort      = 9470
	DefaultNICHTTPPort   = 9471
	DefaultCPUHTTPPort   = 9472
	DefaultTPUHTTPPort   = 9473
	DefaultPlainHTTPPort = 9474
)

// The workloads of each kind's defaults, and the TPU driver's controller.
var (
	gpuWorkload           = kindWorkload(KindGPU)
	nicWorkload           = kindWorkload(KindNIC)
	cpuWorkload           = kindWorkload(KindCPU)
	tpuWorkload           = kindWorkload(KindTPU)
	tpuControllerWorkload = workload{TPUNamespace, TPUControllerName, ""}
)

func kindWorkload(k Kind) workload {
	o := DefaultOptions(k)
	return workloadOf(&o)
}

// plainWorkload is the plain driver's, or a variant's.
func plainWorkload(variant string) workload {
	o := DefaultOptions(KindPlain)
	o.Variant = variant
	return workloadOf(&o)
}

// The names of the kinds' other DeviceClasses.
func MIGDeviceClassName(driver string) string      { return "mig." + driver }
func IMEXDeviceClassName(driver string) string     { return "imex." + driver }
func VFDeviceClassName(driver string) string       { return "vf." + driver }
func SubsliceDeviceClassName(driver string) string { return "subslice." + driver }

// on returns the workload pinned to node ("" for every node).
func (w workload) on(node string) workload {
	w.node = node
	return w
}

// TestDefaultNamesArePinned: each kind's defaults render the namespace and
// name the constants above pin.
func TestDefaultNamesArePinned(t *testing.T) {
	for _, c := range []struct {
		got       workload
		namespace string
		name      string
	}{
		{gpuWorkload, Namespace, Name},
		{nicWorkload, NICNamespace, NICName},
		{cpuWorkload, CPUNamespace, CPUName},
		{tpuWorkload, TPUNamespace, TPUName},
		{kindWorkload(KindPlain), PlainNamespace, PlainName},
	} {
		if c.got.namespace != c.namespace || c.got.name != c.name {
			t.Errorf("defaults render %s/%s, want %s/%s", c.got.namespace, c.got.name, c.namespace, c.name)
		}
	}
}
