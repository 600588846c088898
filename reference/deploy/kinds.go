package deploy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"drakit.dev/drakit/internal/nvidiahw"
	"drakit.dev/drakit/reference/cpudriver"
	"drakit.dev/drakit/reference/nicdriver"
	"drakit.dev/drakit/reference/plaindriver"
	"drakit.dev/drakit/reference/tpudriver"
)

// What each kind has of its own in the deployment: its names and defaults
// (the chart's table drakit-driver.kinds has the same; deployments/helm's
// test compares), the checks of its options, the host paths it mounts and
// its own values of the chart. Everything else, the objects included, is
// the chart's.

// kindSpec is one kind's.
type kindSpec struct {
	// name names the deployment's objects and the app label of its pods;
	// namespace is its namespace.
	name, namespace string
	// driverName and httpPort are the defaults of Options.DriverName and
	// HTTPPort.
	driverName string
	httpPort   int
	// defaults sets the kind's other defaults.
	defaults func(o *Options)
	// validate checks the kind's own options.
	validate func(o *Options) []error
	// hostPaths are the host path options the driver pod mounts besides
	// KubeletRootDir and CDIDir.
	hostPaths func(o *Options) []hostPathOption
	// values are the kind's own values of the chart.
	values func(o *Options) map[string]any
}

// hostRoot is the HostRoot option.
func hostRoot(o *Options) []hostPathOption {
	return []hostPathOption{{"HostRoot", "host-root", o.HostRoot}}
}

// kinds are the kinds' specs.
var kinds = map[Kind]kindSpec{
	KindGPU: {
		name: "drakit-driver", namespace: "drakit-system", driverName: "gpu.drakit.dev", httpPort: 9470,
		defaults: func(o *Options) { o.DeviceMetadata = true },
		validate: func(o *Options) []error {
			var errs []error
			if o.RuntimeClassName != "" {
				if msgs := validation.IsDNS1123Subdomain(o.RuntimeClassName); len(msgs) > 0 {
					errs = append(errs, fmt.Errorf("RuntimeClassName (--runtime-class-name) %q: %s", o.RuntimeClassName, strings.Join(msgs, "; ")))
				}
			}
			if o.IMEXChannels < 0 || o.IMEXChannels > nvidiahw.IMEXMaxChannels {
				errs = append(errs, fmt.Errorf("IMEXChannels (--imex-channels) %d: want 0 (no IMEX controller) to %d", o.IMEXChannels, nvidiahw.IMEXMaxChannels))
			}
			return errs
		},
		hostPaths: hostRoot,
		values: func(o *Options) map[string]any {
			return map[string]any{"gpu": map[string]any{
				"partitionableAlpha": o.PartitionableAlpha, "deviceMetadata": o.DeviceMetadata,
				"bindingConditions": o.BindingConditions, "listAttributes": o.ListAttributes,
				"deviceNodesOnly": o.DeviceNodesOnly, "runtimeClassName": o.RuntimeClassName, "privileged": o.Privileged,
				"imex": map[string]any{"channels": o.IMEXChannels},
			}}
		},
	},
	KindNIC: {
		name: "drakit-nic-driver", namespace: "drakit-nic", driverName: nicdriver.DefaultDriverName, httpPort: 9471,
		defaults: func(o *Options) { o.VFsPerPF = nicdriver.DefaultVFsPerPF },
		validate: func(o *Options) []error {
			if o.VFsPerPF < 0 || o.VFsPerPF > nicdriver.MaxVFsPerPF {
				return []error{fmt.Errorf("VFsPerPF (--vfs-per-pf) %d is not between 0 and %d", o.VFsPerPF, nicdriver.MaxVFsPerPF)}
			}
			return nil
		},
		hostPaths: hostRoot,
		values:    func(o *Options) map[string]any { return map[string]any{"nic": map[string]any{"vfsPerPF": o.VFsPerPF}} },
	},
	KindCPU: {
		name: "drakit-cpu-driver", namespace: "drakit-cpu", driverName: cpudriver.DefaultDriverName, httpPort: 9472,
		defaults: func(o *Options) { o.StateDir = cpudriver.DefaultStateDir },
		validate: func(*Options) []error { return nil },
		hostPaths: func(o *Options) []hostPathOption {
			return append(hostRoot(o), hostPathOption{"StateDir", "state-dir", o.StateDir})
		},
		values: func(*Options) map[string]any { return nil },
	},
	KindTPU: {
		name: "drakit-tpu-driver", namespace: "drakit-tpu", driverName: tpudriver.DefaultDriverName, httpPort: 9473,
		defaults: func(o *Options) { o.Shapes = tpudriver.DefaultShapes },
		validate: func(o *Options) []error {
			if _, err := tpudriver.ParseShapes(o.Shapes); err != nil {
				return []error{fmt.Errorf("Shapes (--shapes): %w", err)}
			}
			return nil
		},
		hostPaths: hostRoot,
		values:    func(o *Options) map[string]any { return map[string]any{"tpu": map[string]any{"shapes": o.Shapes}} },
	},
	KindPlain: {
		name: "drakit-plain-driver", namespace: "drakit-plain", driverName: plaindriver.DefaultDriverName, httpPort: 9474,
		defaults: func(o *Options) {
			o.StateDir, o.Devices = plaindriver.DefaultStateDir, plaindriver.DefaultDevices
		},
		validate: func(o *Options) []error {
			var errs []error
			if err := plaindriver.ValidateVariantName(o.Variant); err != nil {
				errs = append(errs, fmt.Errorf("Variant (--variant): %w", err))
			}
			styleErr, defectErr := o.Style.Validate(), o.Defect.Validate()
			if styleErr != nil {
				errs = append(errs, fmt.Errorf("Style (--style): %w", styleErr))
			}
			if defectErr != nil {
				errs = append(errs, fmt.Errorf("Defect (--defect): %w", defectErr))
			}
			if styleErr == nil && defectErr == nil {
				if err := o.Defect.ValidateStyle(o.Style); err != nil {
					errs = append(errs, fmt.Errorf("Defect (--defect): %w", err))
				} else if err := plaindriver.ValidateDevices(o.Devices, o.Style, o.Defect); err != nil {
					errs = append(errs, fmt.Errorf("Devices (--devices): %w", err))
				}
			}
			return errs
		},
		hostPaths: func(o *Options) []hostPathOption { return []hostPathOption{{"StateDir", "state-dir", o.StateDir}} },
		values: func(o *Options) map[string]any {
			return map[string]any{"plain": map[string]any{
				"devices": o.Devices, "style": string(o.Style), "defect": string(o.Defect), "variant": o.Variant,
			}}
		},
	},
}

// kindField is an option that one kind has of its own, and whether o sets
// it.
type kindField struct {
	kinds       []Kind
	field, flag string
	set         bool
}

// kindFields are the options that some kinds alone have, each with whether
// o sets it (Validate refuses it set for another kind).
func kindFields(o *Options) []kindField {
	gpu, nic, tpu, plain := []Kind{KindGPU}, []Kind{KindNIC}, []Kind{KindTPU}, []Kind{KindPlain}
	return []kindField{
		{gpu, "PartitionableAlpha", "partitionable-alpha", o.PartitionableAlpha},
		{gpu, "DeviceMetadata", "device-metadata", o.DeviceMetadata},
		{gpu, "BindingConditions", "binding-conditions", o.BindingConditions},
		{gpu, "ListAttributes", "list-attributes", o.ListAttributes},
		{gpu, "DeviceNodesOnly", "device-nodes-only", o.DeviceNodesOnly},
		{gpu, "RuntimeClassName", "runtime-class-name", o.RuntimeClassName != ""},
		{gpu, "Privileged", "privileged", o.Privileged},
		{gpu, "IMEXChannels", "imex-channels", o.IMEXChannels != 0},
		{nic, "VFsPerPF", "vfs-per-pf", o.VFsPerPF != 0},
		{tpu, "Shapes", "shapes", o.Shapes != ""},
		{[]Kind{KindCPU, KindPlain}, "StateDir", "state-dir", o.StateDir != ""},
		{plain, "Devices", "devices", o.Devices != 0},
		{plain, "Variant", "variant", o.Variant != ""},
		{plain, "Style", "style", o.Style != ""},
		{plain, "Defect", "defect", o.Defect != ""},
	}
}
