package declaration

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// devPrefix is the directory every declared device node is below.
const devPrefix = "/dev/"

// validatePath checks a path pattern: valid placeholders, at least one, an
// absolute clean path below under (when set) whatever the placeholders
// expand to.
func validatePath(pattern, under string) error {
	segs, err := parsePattern(pattern)
	if err != nil {
		return err
	}
	if strings.ContainsRune(pattern, 0) {
		return errors.New("a path cannot hold a NUL character")
	}
	if err := requirePlaceholder(segs, "every device would get the same path"); err != nil {
		return err
	}
	// A sample expansion shows the path's shape: placeholders expand to
	// one path element's part, never to "/".
	var b strings.Builder
	for _, s := range segs {
		if s.placeholder == "" {
			b.WriteString(s.literal)
		} else {
			b.WriteString("x")
		}
	}
	sample := b.String()
	switch {
	case !path.IsAbs(sample) || path.Clean(sample) != sample:
		return errors.New(`must be an absolute, clean path (no "//", "." or ".." elements, no trailing "/")`)
	case under != "" && !strings.HasPrefix(sample, under):
		return fmt.Errorf("must be below %s", under)
	}
	return nil
}

// validateNumber checks a device number pattern: valid placeholders, and
// a decimal number when it has none.
func validateNumber(pattern string) error {
	segs, err := parsePattern(pattern)
	if err != nil {
		return err
	}
	if requirePlaceholder(segs, "") == nil {
		return nil
	}
	if _, err := strconv.ParseUint(pattern, 10, 32); err != nil {
		return errors.New("must be a decimal device number or a pattern such as {attribute:minor}")
	}
	return nil
}

// Validate checks the node's patterns and type as a declaration's
// deviceNodes are checked.
func (n DeviceNode) Validate() error {
	var problems []string
	if err := validatePath(n.Path, devPrefix); err != nil {
		problems = append(problems, fmt.Sprintf("path %q: %v", n.Path, err))
	}
	if n.Type != "" && n.Type != CharDevice && n.Type != BlockDevice {
		problems = append(problems, fmt.Sprintf("type %q: must be %q or %q", n.Type, CharDevice, BlockDevice))
	}
	for _, f := range []struct{ name, value string }{{"major", n.Major}, {"minor", n.Minor}} {
		if f.value == "" {
			continue
		}
		if err := validateNumber(f.value); err != nil {
			problems = append(problems, fmt.Sprintf("%s %q: %v", f.name, f.value, err))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

// Validate checks the mount's path pattern as a declaration's mounts are
// checked.
func (m Mount) Validate() error {
	if err := validatePath(m.Path, ""); err != nil {
		return fmt.Errorf("path %q: %w", m.Path, err)
	}
	return nil
}

// ExpandedNode is a DeviceNode for one device.
type ExpandedNode struct {
	Path string
	// Type is "" when the declaration leaves it open.
	Type string
	// Major and Minor are the device numbers where HasMajor and HasMinor
	// say that the declaration gives them.
	Major, Minor       uint32
	HasMajor, HasMinor bool
}

// String renders the node for messages: "/dev/nvidia3 (c 195:3)", with
// "*" for what the declaration leaves open.
func (e ExpandedNode) String() string {
	typ, major, minor := e.Type, "*", "*"
	if typ == "" {
		typ = "c|b"
	}
	if e.HasMajor {
		major = strconv.FormatUint(uint64(e.Major), 10)
	}
	if e.HasMinor {
		minor = strconv.FormatUint(uint64(e.Minor), 10)
	}
	return fmt.Sprintf("%s (%s %s:%s)", e.Path, typ, major, minor)
}

// Expand returns the node of the device. The error wraps ErrMissingValue
// when the device does not publish a value the patterns need.
func (n DeviceNode) Expand(v DeviceValues) (ExpandedNode, error) {
	e := ExpandedNode{Type: n.Type}
	var err error
	if e.Path, err = expandPath(n.Path, v); err != nil {
		return e, err
	}
	if n.Major != "" {
		if e.Major, err = expandNumber(n.Major, v); err != nil {
			return e, err
		}
		e.HasMajor = true
	}
	if n.Minor != "" {
		if e.Minor, err = expandNumber(n.Minor, v); err != nil {
			return e, err
		}
		e.HasMinor = true
	}
	return e, nil
}

// ExpandPath returns the mount point of the device.
func (m Mount) ExpandPath(v DeviceValues) (string, error) {
	return expandPath(m.Path, v)
}

// ErrBadValue is wrapped by the Expand errors when a device's value cannot
// stand where the pattern puts it (a "/" in a path element, a device
// number that is not a number).
var ErrBadValue = errors.New("the device's value does not fit the pattern")

// expandPath substitutes a path pattern; a value that would add or leave
// a path element is refused.
func expandPath(pattern string, v DeviceValues) (string, error) {
	segs, err := parsePattern(pattern)
	if err != nil {
		return "", fmt.Errorf("expand pattern %q: %w: %w", pattern, ErrInvalid, err)
	}
	for _, s := range segs {
		if s.placeholder == "" {
			continue
		}
		value := placeholderValue(s, v)
		if strings.ContainsAny(value, "/\x00") || value == "." || value == ".." {
			return "", fmt.Errorf("expand pattern %q for device %s: %s is %q, which is not part of one path element: %w", pattern, v.Name, s.placeholder, value, ErrBadValue)
		}
	}
	return expand(pattern, v, func(s string) string { return s })
}

// expandNumber substitutes a device number pattern and parses the result.
func expandNumber(pattern string, v DeviceValues) (uint32, error) {
	s, err := expand(pattern, v, func(s string) string { return s })
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("expand pattern %q for device %s: %q is not a device number: %w", pattern, v.Name, s, ErrBadValue)
	}
	return uint32(n), nil
}

// placeholderValue is what one placeholder stands for; "" when the device
// has no value.
func placeholderValue(s segment, v DeviceValues) string {
	switch {
	case s.placeholder == PlaceholderDevice:
		return v.Name
	case s.placeholder == PlaceholderIdentity:
		return v.Identity
	case v.Attribute != nil:
		value, _ := v.Attribute(s.attribute)
		return value
	}
	return ""
}
