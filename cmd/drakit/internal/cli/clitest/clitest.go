// Package clitest has what the command groups' tests share: running a
// group under drakit's root, the 1:1 flag check, a test API server.
package clitest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
)

// CheckFlagsMapOneToOne checks the CLI habit "flags map 1:1 onto a Config":
// setting any flag of fs changes exactly one field of *cfg, no two flags set
// the same field, and every exported field has a flag (unexported fields are
// the package's own state, never configuration). fs must be bound to cfg.
func CheckFlagsMapOneToOne[T any](t *testing.T, fs *pflag.FlagSet, cfg *T) {
	t.Helper()
	covered := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		before := *cfg
		// A bool flag is set to the opposite of its default (some
		// default to true).
		flipped := "true"
		if f.DefValue == "true" {
			flipped = "false"
		}
		value := map[string]string{"string": "/x/" + f.Name, "int": "4242", "duration": "7m3s", "bool": flipped}[f.Value.Type()]
		if value == "" {
			t.Fatalf("flag --%s has unexpected type %s", f.Name, f.Value.Type())
		}
		if err := fs.Set(f.Name, value); err != nil {
			t.Fatalf("set --%s: %v", f.Name, err)
		}
		var changed []string
		b, a := reflect.ValueOf(before), reflect.ValueOf(*cfg)
		for i := range b.NumField() {
			if !b.Type().Field(i).IsExported() {
				continue
			}
			if !reflect.DeepEqual(b.Field(i).Interface(), a.Field(i).Interface()) {
				changed = append(changed, b.Type().Field(i).Name)
			}
		}
		if len(changed) != 1 {
			t.Errorf("--%s changed fields %v, want exactly one", f.Name, changed)
			return
		}
		if other, dup := covered[changed[0]]; dup {
			t.Errorf("field %s is set by --%s and --%s", changed[0], other, f.Name)
		}
		covered[changed[0]] = f.Name
	})
	typ := reflect.TypeFor[T]()
	for i := range typ.NumField() {
		if !typ.Field(i).IsExported() {
			continue
		}
		if _, ok := covered[typ.Field(i).Name]; !ok {
			t.Errorf("%s.%s has no flag", typ.Name(), typ.Field(i).Name)
		}
	}
}

// ReadyButSlow answers /readyz at once and every other request after a
// while: the existing provider's check passes, the kit's preflight waits.
func ReadyButSlow(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			fmt.Fprint(w, "ok")
			return
		}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Run runs group under drakit's root (cli.NewRoot: the logging flags,
// path flags made absolute) with args, the group's name first, and
// returns what it printed.
func Run(t *testing.T, group *cobra.Command, args ...string) (string, error) {
	t.Helper()
	root := cli.NewRoot(group)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}
