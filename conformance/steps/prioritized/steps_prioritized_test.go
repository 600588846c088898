package prioritized

import (
	"encoding/json"
	"slices"
	"testing"

	"drakit.dev/drakit/conformance/kit"
)

func TestPrioritizedDefectClaims(t *testing.T) {
	t.Parallel()
	c, err := kit.DefectClaim("bad", "9 subrequests", "gpu.drakit.dev")
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Spec.Devices.Requests[0]; len(r.FirstAvailable) != 9 || r.Exactly != nil {
		t.Errorf("9 subrequests: got %d subrequests, exactly %v", len(r.FirstAvailable), r.Exactly)
	}
	c, err = kit.DefectClaim("bad", "two subrequests of the same name", "gpu.drakit.dev")
	if err != nil {
		t.Fatal(err)
	}
	if subs := c.Spec.Devices.Requests[0].FirstAvailable; len(subs) != 2 || subs[0].Name != subs[1].Name {
		t.Errorf("two subrequests of the same name: got %+v", subs)
	}
	c, err = kit.DefectClaim("bad", "a request with both exactly and firstAvailable", "gpu.drakit.dev")
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Spec.Devices.Requests[0]; r.Exactly == nil || len(r.FirstAvailable) != 1 {
		t.Errorf("both exactly and firstAvailable: got %+v", r)
	}
	c, err = kit.DefectClaim("bad", "an adminAccess request", "gpu.drakit.dev")
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Spec.Devices.Requests[0].Exactly.AdminAccess; a == nil || !*a {
		t.Errorf("an adminAccess request: adminAccess = %v", a)
	}
}

func TestOpaqueConfigFor(t *testing.T) {
	t.Parallel()
	c, err := opaqueConfigFor("gpu/one")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Requests, []string{"gpu/one"}) || c.Opaque == nil || c.Opaque.Driver != configMarkerDriver {
		t.Fatalf("config = %+v", c)
	}
	var params map[string]string
	if err := json.Unmarshal(c.Opaque.Parameters.Raw, &params); err != nil || params[configMarker] != "gpu/one" {
		t.Errorf("parameters %s (err %v), want %s: gpu/one", c.Opaque.Parameters.Raw, err, configMarker)
	}
}

func TestQuotedListAndNeeds(t *testing.T) {
	t.Parallel()
	if got := quotedList(`"first", "second/other" and "gpu"`); !slices.Equal(got, []string{"first", "second/other", "gpu"}) {
		t.Errorf("quotedList = %v", got)
	}
	n := kit.NewScenarioNeeds()
	needsLargerCount(1, 3)(n, []string{"c", "2", "two", "1", "one"})
	if n.WholeClaims != 2 {
		t.Errorf("needsLargerCount leased %d whole devices, want 2", n.WholeClaims)
	}
	if got := kit.DeviceQuotaResource("gpu.drakit.dev"); got != "gpu.drakit.dev.deviceclass.resource.k8s.io/devices" {
		t.Errorf("deviceQuotaResource = %s", got)
	}
}
