package drivercmdtest

import (
	"os"
	"reflect"
	"testing"
)

// ClearEnv unsets the environment variables names for the rest of the
// test (they are restored when it ends).
func ClearEnv(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		t.Setenv(name, "") // restored when the test ends
		if err := os.Unsetenv(name); err != nil {
			t.Fatal(err)
		}
	}
}

// CheckEveryFieldSet reports every field of the struct cfg that is zero:
// parsed from flags that set every field to a non-zero value, none may be.
func CheckEveryFieldSet(t *testing.T, cfg any) {
	t.Helper()
	v := reflect.ValueOf(cfg)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("Config.%s is not set by any flag", v.Type().Field(i).Name)
		}
	}
}
