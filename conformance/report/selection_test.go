package report

import (
	"testing"
	"testing/fstest"
)

func TestMatchesTags(t *testing.T) {
	tags := []string{"@kep-4815", "@core", "@emulator"}
	for filter, want := range map[string]bool{
		"":                                  true,
		"@kep-4815":                         true,
		"kep-4815":                          true,
		"@kep-4381":                         false,
		"@kep-4381,@kep-4815":               true,
		"@kep-4815 && @core":                true,
		"@kep-4815 && @extended":            false,
		"@kep-4815 && ~@emulator":           false,
		"~@emulator":                        false,
		"@kep-4381 && ~@emulator,@core":     true,
		"@kep-4815 && ~@extended":           true,
		"@kep-4381,@kep-5963 && ~@extended": false,
	} {
		if got := MatchesTags(filter, tags); got != want {
			t.Errorf("MatchesTags(%q, %v) = %t, want %t", filter, tags, got, want)
		}
	}
}

func TestSelected(t *testing.T) {
	fsys := fstest.MapFS{
		"a/x.feature": {Data: []byte(`@kep-1
Feature: x
  @core
  Scenario: one
    Given a step

  @extended @emulator
  Scenario Outline: two <n>
    Given a step <n>

    Examples:
      | n |
      | 1 |
      | 2 |
`)},
	}
	for filter, want := range map[string]int{"": 3, "@core": 1, "~@emulator": 1, "@kep-1 && @extended": 2, "@kep-2": 0} {
		got, err := Selected(fsys, filter)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want {
			t.Errorf("Selected(%q): %d scenarios, want %d", filter, len(got), want)
		}
	}
}
