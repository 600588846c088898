package kit_test

import (
	"context"
	"io/fs"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/features"
)

var (
	contextType = reflect.TypeOf((*context.Context)(nil)).Elem()
	errorType   = reflect.TypeOf((*error)(nil)).Elem()
)

// TestStepDefinitions checks every step definition of a run (the kit's and
// every step package's), bound to a world outside any run:
// its pattern is anchored, its function has a shape godog accepts (an
// optional context first, error or (context, error) out), and it has one
// parameter per capture group.
func TestStepDefinitions(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, st := range kit.Definitions(conformance.Steps...) {
		if seen[st.Pattern] {
			t.Errorf("pattern %q is defined twice", st.Pattern)
		}
		seen[st.Pattern] = true
		if !strings.HasPrefix(st.Pattern, "^") || !strings.HasSuffix(st.Pattern, "$") {
			t.Errorf("pattern %q is not anchored", st.Pattern)
		}
		re, err := regexp.Compile(st.Pattern)
		if err != nil {
			t.Errorf("pattern %q: %v", st.Pattern, err)
			continue
		}
		typ := reflect.TypeOf(st.Fn)
		if typ.Kind() != reflect.Func {
			t.Errorf("step %q: %v is not a function", st.Pattern, typ)
			continue
		}
		for i := 1; i < typ.NumIn(); i++ {
			if typ.In(i) == contextType {
				t.Errorf("step %q: function %v takes a context.Context other than first", st.Pattern, typ)
			}
		}
		switch {
		case typ.NumOut() == 1 && typ.Out(0) == errorType:
		case typ.NumOut() == 2 && typ.Out(0) == contextType && typ.Out(1) == errorType:
		default:
			t.Errorf("step %q: function %v must return error or (context.Context, error)", st.Pattern, typ)
		}
		if got, want := len(stepArgs(typ)), re.NumSubexp(); got != want {
			t.Errorf("step %q: function takes %d arguments, the pattern captures %d", st.Pattern, got, want)
		}
	}
}

// TestFeatureStepsAreDefined matches every step of every embedded feature
// against the definitions, as godog's strict mode would at run time: each
// step must match exactly one definition and its captures must convert to
// the function's parameter types. Every definition must be used.
func TestFeatureStepsAreDefined(t *testing.T) {
	t.Parallel()
	type def struct {
		re  *regexp.Regexp
		Fn  reflect.Type
		use int
	}
	var defs []*def
	for _, st := range kit.Definitions(conformance.Steps...) {
		defs = append(defs, &def{re: regexp.MustCompile(st.Pattern), Fn: reflect.TypeOf(st.Fn)})
	}
	files, err := fs.Glob(features.FS, "*/*.feature")
	if err != nil || len(files) == 0 {
		t.Fatalf("no features: %v", err)
	}
	for _, file := range files {
		data, err := features.FS.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ids := &messages.Incrementing{}
		doc, err := gherkin.ParseGherkinDocument(strings.NewReader(string(data)), ids.NewId)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, p := range gherkin.Pickles(*doc, file, ids.NewId) {
			for _, step := range p.Steps {
				var matches []*def
				for _, d := range defs {
					if d.re.MatchString(step.Text) {
						matches = append(matches, d)
					}
				}
				where := file + ": " + p.Name + ": " + step.Text
				switch len(matches) {
				case 0:
					t.Errorf("%s: undefined step", where)
					continue
				case 1:
				default:
					t.Errorf("%s: ambiguous step, %d definitions match", where, len(matches))
					continue
				}
				d := matches[0]
				d.use++
				groups := d.re.FindStringSubmatch(step.Text)[1:]
				args := stepArgs(d.Fn)
				if len(args) != len(groups) {
					continue // TestStepDefinitions reports it
				}
				for i, g := range groups {
					switch args[i].Kind() {
					case reflect.Int, reflect.Int64:
						if _, err := strconv.ParseInt(g, 10, 64); err != nil {
							t.Errorf("%s: argument %d %q is not an integer", where, i+1, g)
						}
					case reflect.String:
					default:
						t.Errorf("%s: unsupported parameter type %v", where, args[i])
					}
				}
			}
		}
	}
	for _, d := range defs {
		if d.use == 0 {
			t.Errorf("step %q is used by no feature", d.re)
		}
	}
}

// stepArgs are the parameters of a step function that take the captures:
// all but a leading context.Context.
func stepArgs(fn reflect.Type) []reflect.Type {
	var out []reflect.Type
	for i := range fn.NumIn() {
		if i == 0 && fn.In(0) == contextType {
			continue
		}
		out = append(out, fn.In(i))
	}
	return out
}
