package strictyaml

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestFieldErrorsListsEveryProblemAndMatchesItsClass(t *testing.T) {
	errInvalid := errors.New("invalid thing")
	err := error(&FieldErrors{Source: "file x.yaml", Class: errInvalid, Errs: field.ErrorList{
		field.Required(field.NewPath("spec", "a"), ""),
		field.Invalid(field.NewPath("spec", "b"), 3, "must be even"),
	}})
	want := "file x.yaml: invalid thing:\n  spec.a: Required value\n  spec.b: Invalid value: 3: must be even"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if !errors.Is(err, errInvalid) {
		t.Errorf("errors.Is(err, its class) = false")
	}
	if errors.Is(err, errors.New("invalid thing")) {
		t.Errorf("errors.Is matched another sentinel with the same text")
	}
}
