package fielderr

import (
	"errors"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrInvalid classifies every error about a profile's content: YAML syntax,
// unknown fields, wrong types and failed validation. Package profile
// exports it as profile.ErrInvalid.
var ErrInvalid = errors.New("invalid node profile")

// Duplicate reports value at path as a duplicate of the one at first.
func Duplicate(path *field.Path, value any, first *field.Path) *field.Error {
	return WithDetail(field.Duplicate(path, value), "also "+first.String())
}

// WithDetail sets e's detail and returns e.
func WithDetail(e *field.Error, detail string) *field.Error {
	e.Detail = detail
	return e
}

// ValidateName checks that name is set and a DNS label.
func ValidateName(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}
