package declaration

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Placeholders only a FaultCommand's patterns know, beside those of every
// pattern.
const (
	// PlaceholderNode stands for the name of the node whose ResourceSlice
	// publishes the device.
	PlaceholderNode = "{node}"
	// PlaceholderFault stands for the fault as declared
	// (FaultResponse.Name).
	PlaceholderFault = "{fault}"
)

// commandPlaceholders are the placeholders a fault command knows beyond
// those of every pattern.
var commandPlaceholders = []string{PlaceholderNode, PlaceholderFault}

// maxFaultNameLength bounds FaultResponse.Fault, a word of a flag value
// and of a command line.
const maxFaultNameLength = 63

// faultName is FaultResponse.Fault's syntax: one argument of a command,
// and a key of the kit's --fault-responses flag, so no "=", "," or space.
var faultName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:+/-]*$`)

// FaultValues are what a fault command's placeholders stand for, for one
// device and one fault.
type FaultValues struct {
	DeviceValues
	// Node is the name of the node whose ResourceSlice publishes the
	// device; empty when the slice names none.
	Node string
	// Fault is the fault as declared (FaultResponse.Name); empty for a
	// reset that does not follow an injection.
	Fault string
}

// ExpandInject returns the argv that injects v.Fault under v's device.
// The error wraps ErrMissingValue when the device or the fault lacks a
// value the command needs.
func (c *FaultCommand) ExpandInject(v FaultValues) ([]string, error) {
	return expandArgv(c.Inject, v)
}

// ExpandReset returns the argv that ends every fault of v's device.
func (c *FaultCommand) ExpandReset(v FaultValues) ([]string, error) {
	return expandArgv(c.Reset, v)
}

// expandArgv substitutes each argument verbatim: the argv goes to the
// program as it is, through no shell.
func expandArgv(argv []string, v FaultValues) ([]string, error) {
	out := make([]string, 0, len(argv))
	for _, a := range argv {
		segs, err := parsePatternWith(a, commandPlaceholders)
		if err != nil {
			return nil, fmt.Errorf("expand argument %q: %w: %w", a, ErrInvalid, err)
		}
		value := func(s segment) string {
			switch s.placeholder {
			case PlaceholderNode:
				return v.Node
			case PlaceholderFault:
				return v.Fault
			}
			return placeholderValue(s, v.DeviceValues)
		}
		e, err := substitute(a, segs, v.Name, value, func(s string) string { return s })
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Validate checks the command as a declaration's faultCommand is checked,
// for a kind that declares faults faults.
func (c *FaultCommand) Validate(faults int) error {
	return validateFaultCommand(field.NewPath("faultCommand"), c, faults).ToAggregate()
}

// validateFaultCommand checks both argvs: a program without placeholders,
// then patterns of known placeholders, naming the device; the injection
// names the fault when there are several to tell apart.
func validateFaultCommand(path *field.Path, c *FaultCommand, faults int) field.ErrorList {
	return append(validateArgv(path.Child("inject"), c.Inject, faults > 1),
		validateArgv(path.Child("reset"), c.Reset, false)...)
}

func validateArgv(path *field.Path, argv []string, needFault bool) field.ErrorList {
	if len(argv) == 0 {
		return field.ErrorList{field.Required(path, `the program and its arguments, e.g. [drakit, emulator, fault, reset, --device, "{identity}"]`)}
	}
	var (
		errs          field.ErrorList
		device, fault bool
	)
	for i, a := range argv {
		ap := path.Index(i)
		segs, err := parsePatternWith(a, commandPlaceholders)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(ap, a, err.Error()))
			continue
		case strings.ContainsRune(a, 0):
			errs = append(errs, field.Invalid(ap, a, "an argument cannot hold a NUL character"))
			continue
		case i == 0 && a == "":
			errs = append(errs, field.Required(ap, "the program: a path, or a name found beside the kit or in PATH"))
			continue
		case i == 0 && requirePlaceholder(segs, "") == nil:
			errs = append(errs, field.Invalid(ap, a, "the program is fixed: placeholders go into its arguments"))
			continue
		}
		for _, s := range segs {
			switch s.placeholder {
			case "", PlaceholderNode:
			case PlaceholderFault:
				fault = true
			default:
				device = true
			}
		}
	}
	if !device {
		errs = append(errs, field.Invalid(path, argv, fmt.Sprintf("names no device: an argument needs %s, %s or {attribute:<name>}", PlaceholderIdentity, PlaceholderDevice)))
	}
	if needFault && !fault {
		errs = append(errs, field.Invalid(path, argv, fmt.Sprintf("several faults are declared: an argument needs %s to say which", PlaceholderFault)))
	}
	return errs
}

// validateFaultName checks FaultResponse.Fault.
func validateFaultName(path *field.Path, name string) field.ErrorList {
	switch {
	case len(name) > maxFaultNameLength:
		return field.ErrorList{field.TooLong(path, name, maxFaultNameLength)}
	case !faultName.MatchString(name):
		return field.ErrorList{field.Invalid(path, name, `must be one word of letters, digits and ".", "_", ":", "+", "/", "-", starting with a letter or digit (the command's argument), e.g. ecc-double`)}
	}
	return nil
}

// ValidateFaultName checks a fault's name as a declaration's
// deviceKinds[].faults[].fault is checked.
func ValidateFaultName(name string) error {
	return validateFaultName(field.NewPath("fault"), name).ToAggregate()
}
