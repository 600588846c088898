package declaration

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// emulatorFaultCommand is the command drakit's GPU declarations name: the
// emulator's, which takes the GPU's UUID and the Xid.
var emulatorFaultCommand = FaultCommand{
	Inject: []string{"drakit", "emulator", "fault", "xid", "--device", "{identity}", "--code", "{fault}"},
	Reset:  []string{"drakit", "emulator", "fault", "reset", "--device", "{identity}"},
}

func TestFaultResponseName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f    FaultResponse
		want string
	}{
		{FaultResponse{Xid: 48}, "48"},
		{FaultResponse{Fault: "ecc-double"}, "ecc-double"},
		{FaultResponse{}, ""},
	} {
		if got := tc.f.Name(); got != tc.want {
			t.Errorf("%+v: name %q, want %q", tc.f, got, tc.want)
		}
	}
}

// Every placeholder expands verbatim into its own argument, however the
// value looks: no shell sees it.
func TestFaultCommandExpand(t *testing.T) {
	t.Parallel()
	c := FaultCommand{
		Inject: []string{"/opt/gpuctl", "inject", "--node={node}", "--gpu={identity}", "{device}/{attribute:index}", "{fault}"},
		Reset:  []string{"gpuctl", "reset", "{identity}"},
	}
	v := FaultValues{
		DeviceValues: DeviceValues{Name: "gpu-3", Identity: "GPU-3 $(id)", Attribute: func(name string) (string, bool) { return "3", name == "index" }},
		Node:         "node-a",
		Fault:        "link:down/2",
	}
	got, err := c.ExpandInject(v)
	if want := []string{"/opt/gpuctl", "inject", "--node=node-a", "--gpu=GPU-3 $(id)", "gpu-3/3", "link:down/2"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("inject %q, %v; want %q", got, err, want)
	}
	got, err = c.ExpandReset(v)
	if want := []string{"gpuctl", "reset", "GPU-3 $(id)"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("reset %q, %v; want %q", got, err, want)
	}
	// A slice without a node name, a device without the attribute.
	for name, v := range map[string]FaultValues{
		"{node}":            {DeviceValues: v.DeviceValues, Fault: "x"},
		"{attribute:index}": {DeviceValues: DeviceValues{Name: "gpu-3", Identity: "GPU-3"}, Node: "n", Fault: "x"},
	} {
		_, err := c.ExpandInject(v)
		if !errors.Is(err, ErrMissingValue) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "device gpu-3") {
			t.Errorf("missing %s: %v, want an ErrMissingValue naming it and the device", name, err)
		}
	}
}

func TestFaultCommandValidate(t *testing.T) {
	t.Parallel()
	if err := emulatorFaultCommand.Validate(3); err != nil {
		t.Errorf("the emulator's command: %v", err)
	}
	one := FaultCommand{Inject: []string{"nicctl", "down", "{identity}"}, Reset: []string{"nicctl", "up", "{device}"}}
	if err := one.Validate(1); err != nil {
		t.Errorf("one fault needs no {fault}: %v", err)
	}
	err := one.Validate(2)
	if err == nil || !strings.Contains(err.Error(), "faultCommand.inject: Invalid value") || !strings.Contains(err.Error(), "{fault}") {
		t.Errorf("two faults, no {fault}: %v", err)
	}
	bad := FaultCommand{Inject: []string{"", "{identity}", "{fault"}}
	err = bad.Validate(1)
	for _, want := range []string{"faultCommand.inject[0]: Required value", `faultCommand.inject[2]: Invalid value: "{fault": placeholder "{fault" is not closed`, "faultCommand.reset: Required value"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
}

// The reference driver's faults go through the emulator's command, the
// Xid as its code.
func TestReferenceDriverFaultCommand(t *testing.T) {
	t.Parallel()
	for _, example := range []string{"reference-driver.yaml", "reference-driver-binding-conditions.yaml", "reference-driver-device-nodes.yaml"} {
		d, err := Load(filepath.Join(examplesDir, example))
		if err != nil {
			t.Fatal(err)
		}
		k := d.DeviceKinds[0]
		if k.FaultCommand == nil || !slices.Equal(k.FaultCommand.Inject, emulatorFaultCommand.Inject) || !slices.Equal(k.FaultCommand.Reset, emulatorFaultCommand.Reset) {
			t.Errorf("%s: fault command %+v, want the emulator's %+v", example, k.FaultCommand, emulatorFaultCommand)
			continue
		}
		v := FaultValues{DeviceValues: DeviceValues{Name: "gpu-0", Identity: "GPU-0a"}, Node: "n", Fault: k.Faults[1].Name()}
		argv, err := k.FaultCommand.ExpandInject(v)
		if want := []string{"drakit", "emulator", "fault", "xid", "--device", "GPU-0a", "--code", "48"}; err != nil || !slices.Equal(argv, want) {
			t.Errorf("%s: inject %q, %v; want %q", example, argv, err, want)
		}
	}
}
