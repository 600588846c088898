package declaration

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Placeholders of EnvVariable patterns.
const (
	// PlaceholderDevice stands for the device's name in its ResourceSlice.
	PlaceholderDevice = "{device}"
	// PlaceholderIdentity stands for the value of the kind's identity
	// attribute.
	PlaceholderIdentity = "{identity}"
	// attributePlaceholder starts {attribute:<name>}, which stands for the
	// value of the device's attribute <name> (a QualifiedName).
	attributePlaceholder = "attribute:"
)

// ErrMissingValue is wrapped by the Expand errors when a pattern needs a
// value the device does not publish.
var ErrMissingValue = errors.New("the device does not publish a value the pattern needs")

// DeviceValues are what placeholders stand for, for one device.
type DeviceValues struct {
	// Name is the device's name in its ResourceSlice.
	Name string
	// Identity is the value of the kind's identity attribute; empty when
	// the device does not publish it.
	Identity string
	// Attribute returns the value of the attribute called name (as the
	// pattern writes it): strings and versions as published, ints in
	// decimal, bools as true or false. Nil means no attributes.
	Attribute func(name string) (value string, ok bool)
}

// segment is a literal text or one placeholder of a pattern.
type segment struct {
	literal string
	// placeholder is {device}, {identity} or {attribute:<name>}; empty
	// for a literal.
	placeholder string
	// attribute is <name> of {attribute:<name>}.
	attribute string
}

// parsePattern splits a pattern into literals and placeholders.
func parsePattern(pattern string) ([]segment, error) {
	return parsePatternWith(pattern, nil)
}

// parsePatternWith is parsePattern that knows the extra placeholders too
// ({node} and {fault} of a fault command).
func parsePatternWith(pattern string, extra []string) ([]segment, error) {
	var out []segment
	rest := pattern
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			out = append(out, segment{literal: rest})
			break
		}
		if rest[open] == '}' {
			return nil, errors.New(`"}" outside a placeholder; literal braces are not supported`)
		}
		if open > 0 {
			out = append(out, segment{literal: rest[:open]})
		}
		end := strings.IndexAny(rest[open+1:], "{}")
		if end < 0 || rest[open+1+end] == '{' {
			return nil, fmt.Errorf("placeholder %q is not closed with \"}\"", truncateText(rest[open:]))
		}
		inner := rest[open+1 : open+1+end]
		s, err := placeholderSegment(inner, extra)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		rest = rest[open+2+end:]
	}
	return out, nil
}

func placeholderSegment(inner string, extra []string) (segment, error) {
	whole := "{" + inner + "}"
	switch {
	case whole == PlaceholderDevice || whole == PlaceholderIdentity || slices.Contains(extra, whole):
		return segment{placeholder: whole}, nil
	case strings.HasPrefix(inner, attributePlaceholder):
		name := strings.TrimPrefix(inner, attributePlaceholder)
		if err := validateQualifiedName(name); err != nil {
			return segment{}, fmt.Errorf("placeholder %s: %w", truncateText(whole), err)
		}
		return segment{placeholder: whole, attribute: name}, nil
	}
	known := append([]string{PlaceholderDevice, PlaceholderIdentity, "{attribute:<name>}"}, extra...)
	return segment{}, fmt.Errorf("unknown placeholder %s; known: %s", truncateText(whole), strings.Join(known, ", "))
}

// truncateText shortens user text quoted in messages.
func truncateText(s string) string {
	const limit = 40
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}

var (
	envNameStart   = regexp.MustCompile(`^[A-Za-z_]`)
	envNameLiteral = regexp.MustCompile(`^[A-Za-z0-9_]*$`)
)

// validateEnvName checks a Name pattern: literals of letters, digits and
// "_", a literal first that starts with a letter or "_", and a placeholder.
func validateEnvName(pattern string) error {
	segs, err := parsePattern(pattern)
	if err != nil {
		return err
	}
	if len(segs) == 0 || segs[0].placeholder != "" || !envNameStart.MatchString(segs[0].literal) {
		return errors.New(`must start with a letter or "_" (a placeholder may expand to a digit)`)
	}
	for _, s := range segs {
		if s.placeholder == "" && !envNameLiteral.MatchString(s.literal) {
			return fmt.Errorf("%q: outside placeholders a variable name has only letters, digits and \"_\"", truncateText(s.literal))
		}
	}
	return requirePlaceholder(segs, "every device would get the same variable")
}

// validateEnvValue checks a Value pattern: valid placeholders, at least one.
func validateEnvValue(pattern string) error {
	segs, err := parsePattern(pattern)
	if err != nil {
		return err
	}
	if strings.ContainsRune(pattern, 0) {
		return errors.New("an environment variable cannot hold a NUL character")
	}
	return requirePlaceholder(segs, "the value would not say which device the variable is for")
}

func requirePlaceholder(segs []segment, why string) error {
	for _, s := range segs {
		if s.placeholder != "" {
			return nil
		}
	}
	return fmt.Errorf("has no placeholder (%s, %s or {attribute:<name>}): %s", PlaceholderDevice, PlaceholderIdentity, why)
}

// ExpandName returns the name of the device's variable. Substituted values
// are upper-cased and every character other than A-Z and 0-9 becomes "_":
// DRAKIT_DEVICE_{device} is DRAKIT_DEVICE_GPU_0 for device gpu-0.
func (e *EnvVariable) ExpandName(v DeviceValues) (string, error) {
	return expand(e.Name, v, envNameText)
}

// ExpandValue returns the value of the device's variable, placeholders
// substituted verbatim. A partition created at prepare has no identity
// attribute yet: the error then wraps ErrMissingValue, and the kit can only
// check that the variable exists.
func (e *EnvVariable) ExpandValue(v DeviceValues) (string, error) {
	return expand(e.Value, v, func(s string) string { return s })
}

func expand(pattern string, v DeviceValues, convert func(string) string) (string, error) {
	segs, err := parsePattern(pattern)
	if err != nil {
		return "", fmt.Errorf("expand pattern %q: %w: %w", pattern, ErrInvalid, err)
	}
	return substitute(pattern, segs, v.Name, func(s segment) string { return placeholderValue(s, v) }, convert)
}

// substitute writes a parsed pattern with each placeholder's value
// converted; a placeholder without a value is an ErrMissingValue naming
// the device.
func substitute(pattern string, segs []segment, device string, value func(segment) string, convert func(string) string) (string, error) {
	var b strings.Builder
	for _, s := range segs {
		if s.placeholder == "" {
			b.WriteString(s.literal)
			continue
		}
		v := value(s)
		if v == "" {
			return "", fmt.Errorf("expand pattern %q for device %s: %s: %w", pattern, device, s.placeholder, ErrMissingValue)
		}
		b.WriteString(convert(v))
	}
	return b.String(), nil
}

// envNameText is a value as part of a variable name: upper case, every
// character other than A-Z and 0-9 replaced by "_".
func envNameText(s string) string {
	b := []byte(strings.ToUpper(s))
	for i, c := range b {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Validate checks the variable's name and value patterns as a declaration's
// identity.env is checked.
func (e *EnvVariable) Validate() error {
	return errors.Join(validateEnvName(e.Name), validateEnvValue(e.Value))
}
