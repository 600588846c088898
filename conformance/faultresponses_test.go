package conformance

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/conformance/declaration"
)

func TestParseFaultResponses(t *testing.T) {
	t.Parallel()
	got, err := parseFaultResponses([]string{"48=Unhealthy/NoExecute", "13=Healthy", "94=Unhealthy/NoSchedule"})
	if err != nil {
		t.Fatal(err)
	}
	want := []faultResponse{{48, "Unhealthy", "NoExecute"}, {13, "Healthy", ""}, {94, "Unhealthy", "NoSchedule"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(faultResponse{})); diff != "" {
		t.Errorf("parse (-want +got):\n%s", diff)
	}
	// What a declaration formats, the flag parses back.
	f := declaration.FaultResponse{Xid: 79, Health: "Unhealthy", Taint: "NoExecute"}
	back, err := parseFaultResponses([]string{declaration.FormatFaultResponse(f)})
	if err != nil || len(back) != 1 || back[0] != (faultResponse{79, "Unhealthy", "NoExecute"}) {
		t.Errorf("round trip of %+v: %+v, %v", f, back, err)
	}
}

func TestParseFaultResponsesErrors(t *testing.T) {
	t.Parallel()
	_, err := parseFaultResponses([]string{"48", "0=Healthy", "x=Healthy", "48=Sick", "94=Unhealthy/PreferNoSchedule", "13=Healthy", "13=Unhealthy"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`"48": want <xid>=<health>`,
		`"0=Healthy": want`,
		`"x=Healthy": want`,
		`"48=Sick": health "Sick" is neither Healthy nor Unhealthy`,
		`"94=Unhealthy/PreferNoSchedule": taint effect "PreferNoSchedule" is not one of NoSchedule, NoExecute, None`,
		`"13=Unhealthy": Xid 13 answered twice`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// FuzzParseFaultResponses: any flag value is parsed or refused with an
// error, never a panic; what is accepted formats back to what was given.
func FuzzParseFaultResponses(f *testing.F) {
	for _, s := range []string{"48=Unhealthy/NoExecute", "13=Healthy", "94=Unhealthy/NoSchedule", "0=Healthy", "x", "48=Sick", "1=Healthy/None"} {
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
		back := declaration.FormatFaultResponse(declaration.FaultResponse{Xid: r.xid, Health: r.health, Taint: r.taint})
		again, err := parseFaultResponses([]string{back})
		if err != nil || len(again) != 1 || again[0] != r {
			t.Fatalf("%q parsed as %+v, formatted %q, parsed again %+v, %v", entry, r, back, again, err)
		}
	})
}
