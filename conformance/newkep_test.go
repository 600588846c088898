package conformance_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// What adding a KEP touches, proved the way a contributor would do it: a
// new module that takes drakit as it is (a replace of this checkout), adds
// one package of steps and one feature directory, and wires the package
// with one line beside conformance.Steps. Its program fails unless every
// step of the new feature has exactly one definition with the new package
// and none without it: nothing else of drakit had to change.
func TestAddingAKEPTouchesOnePackageAndOneFeatureDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	t.Parallel()
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(here))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatalf("read drakit's go.sum: %v", err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": fmt.Sprintf("module example.test/newkep\n\ngo 1.26.0\n\nrequire drakit.dev/drakit v0.0.0\n\nreplace drakit.dev/drakit => %s\n", root),
		"go.sum": string(sum),
		// The new KEP's package: its steps, its own state, one Steps function.
		"steps/kep9999/kep9999.go": `// Package kep9999 is a throw-away KEP's steps.
package kep9999

import (
	"context"
	"fmt"

	"drakit.dev/drakit/conformance/kit"
)

type world struct {
	*kit.World
	widgets int
}

// Steps binds the throw-away KEP's steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	k := &world{World: w}
	return []kit.StepDef{
		{Pattern: ` + "`" + `^the cluster has (\d+) widgets?$` + "`" + `, Fn: k.hasWidgets},
		{Pattern: ` + "`" + `^every widget is accounted for$` + "`" + `, Fn: k.accounted},
	}
}

func (k *world) hasWidgets(n int) error { k.widgets = n; return nil }

func (k *world) accounted(context.Context) error {
	if k.widgets < 0 {
		return fmt.Errorf("%d widgets", k.widgets)
	}
	return nil
}
`,
		// The new KEP's feature directory, with steps of its own and of the kit.
		"features/kep-9999-widgets/widgets.feature": `@kep-9999
Feature: Widgets

  @core
  Scenario: Widgets are counted
    Given the driver's DeviceClass exists
    And the cluster has 2 widgets
    Then every widget is accounted for
`,
		// The one wiring line, and a check of the feature against the steps.
		"main.go": `package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/kit"
	"example.test/newkep/steps/kep9999"
)

func matches(defs []kit.StepDef, step string) int {
	n := 0
	for _, d := range defs {
		if regexp.MustCompile(d.Pattern).MatchString(step) {
			n++
		}
	}
	return n
}

func main() {
	with := kit.Definitions(append(conformance.Steps, kep9999.Steps)...)
	without := kit.Definitions(conformance.Steps...)
	data, err := os.ReadFile("features/kep-9999-widgets/widgets.feature")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	bad := 0
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		for _, kw := range []string{"Given ", "When ", "Then ", "And "} {
			if !strings.HasPrefix(line, kw) {
				continue
			}
			step := strings.TrimPrefix(line, kw)
			own := strings.Contains(step, "widget")
			switch {
			case matches(with, step) != 1:
				fmt.Printf("%q: %d definitions with the new package, want 1\n", step, matches(with, step))
				bad++
			case own && matches(without, step) != 0:
				fmt.Printf("%q: defined without the new package\n", step)
				bad++
			}
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
	fmt.Println("ok")
}
`,
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || strings.TrimSpace(out.String()) != "ok" {
		t.Fatalf("the throw-away KEP's module: %v\n%s", err, out.String())
	}
}
