package strictyaml

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FieldErrors lists every problem of one document of a format with its
// field path, one per line after "<Source>: <Class>:". Class is the
// format's sentinel (e.g. profile.ErrInvalid): Unwrap returns it, so that
// errors.Is(err, <format>.ErrInvalid) holds. A format names it its
// ValidationError (a type alias) and builds it with its own Class.
type FieldErrors struct {
	// Source names the document: "file x.yaml", "built-in profile dgx-h100".
	Source string
	// Class is the format's sentinel error.
	Class error
	// Errs are the problems, in the order found.
	Errs field.ErrorList
}

// Error lists one problem per line.
func (e *FieldErrors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s:", e.Source, e.Class)
	for _, fe := range e.Errs {
		b.WriteString("\n  ")
		b.WriteString(fe.Error())
	}
	return b.String()
}

// Unwrap returns Class.
func (e *FieldErrors) Unwrap() error { return e.Class }
