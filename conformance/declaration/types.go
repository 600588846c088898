package declaration

import (
	"encoding/json"
	"slices"
	"strconv"
)

// APIVersion and Kind identify a driver declaration document.
const (
	APIVersion = "conformance.drakit.dev/v1alpha1"
	Kind       = "DriverDeclaration"
)

// Declaration is what a DRA driver says about itself to the conformance
// kit: its name and pods, the kinds of device it publishes, how a container
// shows each device, which observers check them, the optional capabilities
// it claims and the hardware it manages.
type Declaration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Driver names the driver under test.
	Driver Driver `json:"driver"`
	// DeviceKinds are the kinds of device the driver publishes, one
	// DeviceClass each. At least one kind has no partitions.
	DeviceKinds []DeviceKind `json:"deviceKinds"`
	// Capabilities are the optional capabilities of Kubernetes 1.37 DRA
	// (KnownCapabilities) the driver claims: true claims one, false or
	// absent leaves it unclaimed. Unknown names are invalid.
	Capabilities map[CapabilityName]bool `json:"capabilities,omitempty"`
	// Hardware is what the driver's devices are: HardwareEmulated or
	// HardwareReal. Required.
	Hardware Hardware `json:"hardware"`
	// Torus says which classes give out chips of a 3D torus and its
	// multi-host sub-slices (TPU-like accelerators), for the kit's
	// @tpu-torus scenarios. Optional: without it they are skipped.
	Torus *Torus `json:"torus,omitempty"`
	// Fabric says how the driver publishes a multi-node NVLink fabric: the
	// attribute naming a device's clique and the DeviceClass of its IMEX
	// channels. Optional: without it the kit's @nvlink-fabric scenarios
	// skip.
	Fabric *Fabric `json:"fabric,omitempty"`
	// BindingConditions are the binding conditions (KEP-5007) of the
	// driver's devices and who sets them. Required with the capability
	// bindingConditions claimed, forbidden without it.
	BindingConditions *BindingConditions `json:"bindingConditions,omitempty"`
	// Scenarios select the kit's scenarios the driver is certified with
	// when the run gives no tag filter of its own. Optional: without it,
	// every scenario.
	Scenarios *Scenarios `json:"scenarios,omitempty"`

	// lines maps field paths to the lines they are written on, for
	// declarations read by Parse; nil otherwise.
	lines fieldLines
	// source names the declaration in errors: Parse's name, or "" for a
	// declaration built in code.
	source string
	// sharedKinds are the kinds Set appended as shared, by name: shared
	// before their sharedCapacity is written.
	sharedKinds map[string]bool
	// flags maps field paths to the flags that write them (Flags), for
	// errors.
	flags map[string]string
}

// Scenarios select the kit's scenarios.
type Scenarios struct {
	// Tags is a godog tag filter: terms joined by "&&", alternatives by
	// ",", "~" negates ("@kep-4381 && ~@interpose"). Required.
	Tags string `json:"tags"`
}

// Driver identifies the driver under test.
type Driver struct {
	// Name is the DRA driver name, as in ResourceSlice spec.driver and in
	// allocation results: a DNS subdomain of at most 63 characters.
	Name string `json:"name"`
	// Version is the driver's version as its authors write it (v0.1.0); it
	// goes into the kit's report. Optional.
	Version string `json:"version,omitempty"`
	// Pods find the driver's kubelet plugin pods, for the driver logs in
	// diagnostics and for the scenarios that restart the driver. Optional:
	// without it those scenarios are skipped.
	Pods *DriverPods `json:"pods,omitempty"`
}

// DriverPods select the driver's kubelet plugin pods.
type DriverPods struct {
	// Namespace of the pods; empty means all namespaces.
	Namespace string `json:"namespace,omitempty"`
	// Selector is a label selector matching exactly the driver's pods
	// (app.kubernetes.io/name=drakit-driver). Required.
	Selector string `json:"selector"`
}

// DeviceKind is one kind of device the driver publishes (whole GPUs, MIG
// partitions, NICs, …): the DeviceClass the kit's claims use for it and how
// the kit tells its devices apart, in the ResourceSlices and inside a
// container.
type DeviceKind struct {
	// Name names the kind in the kit's reports: a DNS label, unique.
	Name string `json:"name"`
	// DeviceClass is the DeviceClass whose selectors pick exactly the
	// devices of this kind: a DNS subdomain, unique across kinds.
	DeviceClass string `json:"deviceClass"`
	// Identity says which attribute names a device and how a container
	// shows it.
	Identity Identity `json:"identity"`
	// MemoryCapacity is the device capacity that holds a device's memory in
	// bytes, a resource.k8s.io QualifiedName. Optional.
	MemoryCapacity string `json:"memoryCapacity,omitempty"`
	// OpaqueConfig is a sample of the opaque configuration the driver
	// accepts for this kind's devices in a claim, and what a container then
	// shows. Optional: without it the kit's scenarios that pass the driver
	// opaque configuration do not apply (a driver may define none). The
	// kit's scenarios read it on the first whole-device kind.
	OpaqueConfig *OpaqueConfig `json:"opaqueConfig,omitempty"`
	// PCI says which of a node's PCI functions are devices of this kind,
	// for the kit's inventory check against the node's sysfs. Optional.
	PCI *PCIFunction `json:"pci,omitempty"`
	// Partitions makes this a kind of partitions of another kind's devices
	// (MIG devices of a GPU), counter-consuming devices of KEP-4815. Only
	// with the capability partitionableDevices claimed.
	Partitions *Partitions `json:"partitions,omitempty"`
	// Observers are the kit's ways of checking what a container of this
	// kind sees (Observer). Default: cdi, plus env when Identity.Env is set.
	Observers []Observer `json:"observers,omitempty"`
	// DeviceNodes are the device nodes a container gets per allocated
	// device of this kind. Required with the deviceNodes observer, and
	// only with it.
	DeviceNodes []DeviceNode `json:"deviceNodes,omitempty"`
	// Mounts are the mounts a container gets per allocated device of this
	// kind. Required with the mounts observer, and only with it.
	Mounts []Mount `json:"mounts,omitempty"`
	// SharedCapacity makes this a kind of shared devices (KEP-5075): its
	// devices set allowMultipleAllocations, and several claims share one,
	// each consuming part of this capacity (a resource.k8s.io
	// QualifiedName, e.g. bandwidth). Only with the capability
	// consumableCapacity claimed; not with Partitions. The kit's core
	// scenarios claim the devices of the first kind that is neither shared
	// nor partitioned, and its KEP-5075 scenarios those of the first shared
	// kind.
	SharedCapacity string `json:"sharedCapacity,omitempty"`
	// PCIeRootPeers are DeviceClasses of other drivers on the same nodes
	// whose devices hang below the same PCIe root complexes as this kind's
	// and publish resource.kubernetes.io/pcieRoot too (the GPUs beside a
	// NIC). The kit's alignment scenarios claim a device of this kind and
	// one of the first peer class with the same pcieRoot. Optional.
	PCIeRootPeers []string `json:"pcieRootPeers,omitempty"`
	// Faults are the hardware faults the kit may inject under this kind's
	// devices, through FaultCommand, and how the driver answers each.
	// Optional; the kit's fault scenarios of KEP-4680 and KEP-5055 need it.
	// Only on the first whole-device kind.
	Faults []FaultResponse `json:"faults,omitempty"`
	// FaultCommand is how the kit injects Faults under a device and ends
	// them. Required with Faults, and only with them.
	FaultCommand *FaultCommand `json:"faultCommand,omitempty"`
	// NUMANodesAttribute is an int list attribute (KEP-5491) of every
	// device of this kind: the NUMA nodes the device is close to, the
	// NUMA node of its PCI function first, then the nodes of the same
	// socket at the minimum SLIT distance from it (the list form of
	// resource.kubernetes.io/numaNode, KEP-6072), a resource.k8s.io
	// QualifiedName, e.g. closeNUMANodes. Only with the capability
	// listTypeAttributes claimed; optional. The kit's @kep-5491 @extended
	// scenarios read it on the first whole-device kind.
	NUMANodesAttribute string `json:"numaNodesAttribute,omitempty"`
}

// OpaqueConfig is a sample opaque device configuration
// (DeviceConfiguration.opaque.parameters) and its effect in a container.
type OpaqueConfig struct {
	// Parameters are the sample's parameters, exactly as the driver decodes
	// them (its apiVersion and kind included, if it has them): a JSON
	// object. Required.
	Parameters json.RawMessage `json:"parameters"`
	// Env are environment variables every container of a claim whose
	// devices got this configuration has, with these values: the effect the
	// kit checks. A name with a placeholder (see the package documentation)
	// is one variable per allocated device, GPU_DEVICE_{attribute:index}_SHARING
	// say, and so is its value's. At least one. Required.
	Env map[string]string `json:"env"`
}

// FaultResponse is what a driver does when a hardware fault hits one of its
// devices: the health it reports for the device (KEP-4680) and the taint
// it puts on the device in its ResourceSlice (KEP-5055).
type FaultResponse struct {
	// Fault names the fault as the fault command takes it ({fault}): a
	// word of letters, digits and ".", "_", ":", "+", "/", "-", starting
	// with a letter or digit, at most 63 characters ("ecc-double",
	// "link-down"). Exactly one of Fault and Xid.
	Fault string `json:"fault,omitempty"`
	// Xid is an Xid error of an NVIDIA GPU (internal/nvidiahw's catalogue,
	// or any code above 0): the fault named by its decimal code, which is
	// what {fault} stands for. Exactly one of Fault and Xid.
	Xid uint64 `json:"xid,omitempty"`
	// Health is what the driver reports for the device while the fault
	// lasts: Healthy or Unhealthy. Required.
	Health string `json:"health"`
	// Taint is the effect of the taint the driver puts on the device while
	// the fault lasts: NoSchedule, NoExecute or None; empty when it puts
	// none.
	Taint string `json:"taint,omitempty"`
}

// Name is the fault as the fault command takes it: Fault, or Xid in
// decimal; "" when neither is set.
func (f FaultResponse) Name() string {
	if f.Fault == "" && f.Xid > 0 {
		return strconv.FormatUint(f.Xid, 10)
	}
	return f.Fault
}

// FaultCommand is the command the kit runs on its own host to inject a
// fault under a device and to end it, each an argv (no shell) whose
// elements are patterns: {device}, {identity} and {attribute:<name>} as
// elsewhere, {node} for the node whose ResourceSlice publishes the device
// and {fault} for the fault as declared (FaultResponse.Name). A bare
// program name is looked for beside the kit's own executable first, then
// in PATH, so that "drakit" is the drakit that runs the kit.
type FaultCommand struct {
	// Inject makes the device's hardware report one fault: it returns once
	// the fault is in place. It names the device with a placeholder, and
	// the fault with {fault} when more than one is declared. Required.
	Inject []string `json:"inject"`
	// Reset ends every fault of the device's hardware, as a GPU reset
	// does; resetting a healthy device must succeed. It names the device
	// with a placeholder. Required.
	Reset []string `json:"reset"`
}

// Fault health values and taint effects a FaultResponse may name.
const (
	FaultHealthy   = "Healthy"
	FaultUnhealthy = "Unhealthy"
)

// FaultTaintEffects are the effects a FaultResponse's taint may have.
var FaultTaintEffects = []string{"NoSchedule", "NoExecute", "None"}

// Torus names the classes of a torus driver (TPU-like chips in a 3D
// torus over several hosts).
type Torus struct {
	// ChipClass is the DeviceClass of a node's chips: one of the
	// deviceKinds' classes. Required.
	ChipClass string `json:"chipClass"`
	// SubsliceClass is the DeviceClass of the multi-host sub-slices (one
	// device per placement of a shape, allocated as a whole). Required,
	// not one of the deviceKinds' classes.
	SubsliceClass string `json:"subsliceClass"`
	// ShapeAttribute is the string attribute of a sub-slice naming its
	// shape ("2x2x2"), a resource.k8s.io QualifiedName. Required.
	ShapeAttribute string `json:"shapeAttribute"`
}

// Identity is how the kit identifies a device in the API and in a container.
type Identity struct {
	// Attribute is the string attribute whose value names exactly one
	// device of the driver (a GPU's UUID), a resource.k8s.io QualifiedName:
	// a bare C identifier in the driver's domain, or domain/identifier. The
	// kit selects single devices with it and compares it with what the
	// container shows. A partition created at prepare may publish none; it
	// is then known by its parent and profile (Partitions). Required.
	Attribute string `json:"attribute"`
	// Env is the environment variable a container gets per allocated
	// device. Optional; the env observer needs it.
	Env *EnvVariable `json:"env,omitempty"`
}

// EnvVariable is the per-device environment variable, written as two
// patterns with placeholders (see the package documentation): Name
// "DRAKIT_DEVICE_{device}" with Value "{identity}" gives
// DRAKIT_DEVICE_GPU_0=GPU-… for device gpu-0.
type EnvVariable struct {
	// Name is the variable's name. Substituted values are upper-cased with
	// every character other than A-Z and 0-9 turned into "_"; the literal
	// text must be letters, digits and "_", starting with a letter or "_".
	// It must contain a placeholder, so that each device gets its own
	// variable. Required.
	Name string `json:"name"`
	// Value is the variable's value, substituted verbatim. It must contain
	// a placeholder. Default DefaultEnvValue.
	Value string `json:"value,omitempty"`
}

// DefaultEnvValue is EnvVariable.Value's default: the device's identity.
const DefaultEnvValue = "{identity}"

// DeviceNode is a device node the driver injects into a container for one
// device, written as patterns (see the package documentation): Path
// "/dev/nvidia{attribute:minor}" with Major "195" and Minor
// "{attribute:minor}" is /dev/nvidia3, c 195:3 for a GPU of minor 3.
type DeviceNode struct {
	// Path is the node's path in the container, below /dev. Substituted
	// values are taken verbatim and must not contain "/". It must contain
	// a placeholder, so that each device gets its own node. Required.
	Path string `json:"path"`
	// Type is the node's type: "c" (character) or "b" (block). Optional:
	// empty accepts either.
	Type string `json:"type,omitempty"`
	// Major and Minor are the node's device numbers, patterns that expand
	// to decimal numbers ("195", "{attribute:minor}"). Optional: an empty
	// one is not checked. With both, a node of these numbers at any other
	// path also shows the device.
	Major string `json:"major,omitempty"`
	Minor string `json:"minor,omitempty"`
}

// Device node types of DeviceNode.Type.
const (
	CharDevice  = "c"
	BlockDevice = "b"
)

// Mount is a mount the driver injects into a container for one device,
// written as a pattern: Path "/var/run/plain/{device}".
type Mount struct {
	// Path is the mount point in the container, an absolute path.
	// Substituted values are taken verbatim and must not contain "/". It
	// must contain a placeholder, so that each device gets its own mount.
	// Required.
	Path string `json:"path"`
	// ReadOnly says that the container gets the mount read-only (mount
	// option ro). Optional: false leaves the option unchecked.
	ReadOnly bool `json:"readOnly,omitempty"`
}

// PCIFunction matches a node's PCI functions in sysfs.
type PCIFunction struct {
	// Vendor is the PCI vendor ID, four hex digits ("10de"). Required.
	Vendor string `json:"vendor"`
	// Class is a prefix of the PCI class code, two, four or six hex digits
	// ("0302" for 3D controllers, "03" for any display controller).
	// Required.
	Class string `json:"class"`
}

// Partitions describe a kind whose devices are partitions of the devices
// of another kind, sharing their counters (KEP-4815).
type Partitions struct {
	// ParentKind is the kind of the devices that are partitioned. Default:
	// the only kind without partitions, when there is exactly one.
	ParentKind string `json:"parentKind,omitempty"`
	// ProfileAttribute is the string attribute naming a partition's profile
	// (for MIG "1g.10gb", "3g.40gb"). Required.
	ProfileAttribute string `json:"profileAttribute"`
	// ParentIdentityAttribute is the string attribute of a partition that
	// holds its parent's identity (the value of the parent kind's identity
	// attribute). Required.
	ParentIdentityAttribute string `json:"parentIdentityAttribute"`
}

// Observer is one of the kit's ways of checking what a container sees
// against what the API server allocated.
type Observer string

// The observers.
const (
	// ObserverCDI compares the container with the claim's CDI spec on the
	// node: the spec names exactly the allocated devices and the container
	// has every device node, mount and variable the spec injects. This is
	// the DRA contract every CDI driver is held to.
	ObserverCDI Observer = "cdi"
	// ObserverEnv checks Identity.Env: one variable per allocated device
	// with the expected value, none for another device.
	ObserverEnv Observer = "env"
	// ObserverDeviceNodes checks DeviceKind.DeviceNodes: the container has
	// every declared device node of each allocated device, and none of
	// another device of the driver.
	ObserverDeviceNodes Observer = "deviceNodes"
	// ObserverMounts checks DeviceKind.Mounts: the container has every
	// declared mount of each allocated device (read-only where declared),
	// and none of another device of the driver.
	ObserverMounts Observer = "mounts"
	// ObserverNVML asks NVML inside the container which GPUs and MIG
	// devices it sees: exactly the allocated ones, by identity (NVML UUIDs).
	ObserverNVML Observer = "nvml"
)

// knownObservers lists the observers in the order messages name them.
var knownObservers = []Observer{ObserverCDI, ObserverEnv, ObserverDeviceNodes, ObserverMounts, ObserverNVML}

// KnownObservers returns every observer, in the order messages name them.
func KnownObservers() []Observer { return slices.Clone(knownObservers) }

// Fabric is the driver's multi-node NVLink fabric (GB200 NVL72-like
// racks): the devices of the first whole-device kind carry CliqueAttribute
// when their GPU is in a clique, and ChannelClass selects the IMEX channels
// the driver publishes per clique as multi-node devices.
type Fabric struct {
	// CliqueAttribute is the string attribute whose value names a GPU's
	// NVLink clique (NVIDIA's "<cluster UUID>.<clique ID>"), a
	// resource.k8s.io QualifiedName. Required.
	CliqueAttribute string `json:"cliqueAttribute"`
	// ChannelClass is the DeviceClass selecting the IMEX channels; empty
	// when the driver publishes none (the channel scenarios skip).
	ChannelClass string `json:"channelClass,omitempty"`
}

// Hardware says what the driver's devices are.
type Hardware string

// The hardware values.
const (
	// HardwareEmulated: devices of drakit's hardware emulator; the kit's
	// scenarios that inspect the emulator on the node (@emulator) run.
	HardwareEmulated Hardware = "emulated"
	// HardwareReal: anything else (real devices, or devices the driver
	// simulates itself); @emulator scenarios are not run.
	HardwareReal Hardware = "real"
)

// Observes says whether the observer checks devices of the kind.
func (k *DeviceKind) Observes(o Observer) bool {
	return slices.Contains(k.Observers, o)
}
