package faults

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/conformance/declaration"
)

func TestParseFaultResponses(t *testing.T) {
	t.Parallel()
	got, err := parseFaultResponses([]string{"48=Unhealthy/NoExecute", "13=Healthy", "link:down/2=Unhealthy/NoSchedule"})
	if err != nil {
		t.Fatal(err)
	}
	want := []faultResponse{{"48", "Unhealthy", "NoExecute"}, {"13", "Healthy", ""}, {"link:down/2", "Unhealthy", "NoSchedule"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(faultResponse{})); diff != "" {
		t.Errorf("parse (-want +got):\n%s", diff)
	}
	// What a declaration formats, the flag parses back: an Xid as its
	// decimal code.
	for _, f := range []declaration.FaultResponse{{Xid: 79, Health: "Unhealthy", Taint: "NoExecute"}, {Fault: "ecc-double", Health: "Unhealthy"}} {
		back, err := parseFaultResponses([]string{declaration.FormatFaultResponse(f)})
		if err != nil || len(back) != 1 || back[0] != (faultResponse{f.Name(), f.Health, f.Taint}) {
			t.Errorf("round trip of %+v: %+v, %v", f, back, err)
		}
	}
}

func TestParseFaultResponsesErrors(t *testing.T) {
	t.Parallel()
	_, err := parseFaultResponses([]string{"48", "=Healthy", "-x=Healthy", "48=Sick", "94=Unhealthy/PreferNoSchedule", "13=Healthy", "13=Unhealthy"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`"48": want <fault>=<health>`,
		`"=Healthy": fault: Invalid value: "": must be one word`,
		`"-x=Healthy": fault: Invalid value: "-x": must be one word`,
		`"48=Sick": health "Sick" is neither Healthy nor Unhealthy`,
		`"94=Unhealthy/PreferNoSchedule": taint effect "PreferNoSchedule" is not one of NoSchedule, NoExecute, None`,
		`"13=Unhealthy": fault 13 answered twice`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// FuzzParseFaultResponses: any flag value is parsed or refused with an
// error, never a panic; what is accepted formats back to what was given.
func FuzzParseFaultResponses(f *testing.F) {
	for _, s := range []string{"48=Unhealthy/NoExecute", "13=Healthy", "94=Unhealthy/NoSchedule", "0=Healthy", "x", "48=Sick", "link:down/2=Unhealthy/NoExecute", "1=Healthy/None"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		got, err := parseFaultResponses([]string{entry})
		if err != nil {
			return
		}
		if len(got) != 1 {
			t.Fatalf("%q: %d responses without an error", entry, len(got))
		}
		r := got[0]
		back := declaration.FormatFaultResponse(declaration.FaultResponse{Fault: r.fault, Health: r.health, Taint: r.taint})
		again, err := parseFaultResponses([]string{back})
		if err != nil || len(again) != 1 || again[0] != r {
			t.Fatalf("%q parsed as %+v, formatted %q, parsed again %+v, %v", entry, r, back, again, err)
		}
	})
}
