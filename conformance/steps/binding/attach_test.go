package binding

import (
	"encoding/json"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestSetDeviceCondition checks the attach controller's edit: the condition
// lands on the status.devices entry of each allocated device with binding
// conditions (created when missing, updated in place when present, shares
// told apart), and devices without binding conditions are left alone.
func TestSetDeviceCondition(t *testing.T) {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "fabric"},
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "a", Driver: "d", Pool: "p", Device: "plain"},
				{Request: "b", Driver: "d", Pool: "p", Device: "nic", BindingConditions: []string{"attached"}, BindingFailureConditions: []string{"failed"}},
				{Request: "c", Driver: "d", Pool: "p", Device: "shared", ShareID: ptr.To(types.UID("s1")), BindingConditions: []string{"attached"}, BindingFailureConditions: []string{"failed"}},
			}}},
			Devices: []resourceapi.AllocatedDeviceStatus{
				{Driver: "d", Pool: "p", Device: "nic", Conditions: []metav1.Condition{{Type: "attached", Status: metav1.ConditionFalse, Reason: "Waiting"}}},
				{Driver: "d", Pool: "p", Device: "shared", ShareID: ptr.To("other")},
			},
		},
	}
	if err := setDeviceCondition(c, metav1.Condition{Type: "attached", Status: metav1.ConditionTrue, Reason: "Done"}); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Status.Devices); n != 3 {
		t.Fatalf("status.devices has %d entries, want 3 (nic updated, the other share kept, share s1 added): %+v", n, c.Status.Devices)
	}
	nic := c.Status.Devices[0]
	if len(nic.Conditions) != 1 || nic.Conditions[0].Status != metav1.ConditionTrue || nic.Conditions[0].Reason != "Done" {
		t.Errorf("nic conditions = %+v, want attached=True updated in place", nic.Conditions)
	}
	if len(c.Status.Devices[1].Conditions) != 0 {
		t.Errorf("share %q of device shared got conditions %+v, want none", *c.Status.Devices[1].ShareID, c.Status.Devices[1].Conditions)
	}
	added := c.Status.Devices[2]
	if added.Device != "shared" || added.ShareID == nil || *added.ShareID != "s1" || len(added.Conditions) != 1 || added.Conditions[0].LastTransitionTime.IsZero() {
		t.Errorf("added entry = %+v, want device shared, share s1, attached=True with a transition time", added)
	}
	for _, d := range c.Status.Devices {
		if d.Device == "plain" {
			t.Errorf("device plain, without binding conditions, got an entry: %+v", d)
		}
	}
}

func TestSetDeviceConditionRefusesWhatCannotBeAttached(t *testing.T) {
	cond := metav1.Condition{Type: "attached", Status: metav1.ConditionTrue, Reason: "Done"}
	if err := setDeviceCondition(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, cond); err == nil || !strings.Contains(err.Error(), "claim x is not allocated") {
		t.Errorf("unallocated claim: %v", err)
	}
	plain := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "y"}, Status: resourceapi.ResourceClaimStatus{
		Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "a", Driver: "d", Pool: "p", Device: "plain"}}}},
	}}
	if err := setDeviceCondition(plain, cond); err == nil || !strings.Contains(err.Error(), "no device allocated to it has binding conditions") {
		t.Errorf("claim without binding conditions: %v", err)
	}
}

func TestParseList(t *testing.T) {
	for in, want := range map[string][]string{`[]`: nil, `["*"]`: {"*"}, `["a", "example.com/b"]`: {"a", "example.com/b"}} {
		got, err := parseList(in)
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("parseList(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := parseList(`[NodePrepareResources]`); err == nil || !strings.Contains(err.Error(), "want a JSON array of strings") {
		t.Errorf("parseList of an unquoted list: %v", err)
	}
}

// FuzzParseList: any input either parses into strings that format back to
// an equivalent list or is rejected with the step's hint.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{`[]`, `["*"]`, `["a","b"]`, `[1]`, `{}`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := parseList(in)
		if err != nil {
			if !strings.Contains(err.Error(), "want a JSON array of strings") {
				t.Errorf("parseList(%q): error without the hint: %v", in, err)
			}
			return
		}
		again, err := parseList(mustJSON(t, got))
		if err != nil || strings.Join(again, "\x00") != strings.Join(got, "\x00") {
			t.Errorf("parseList(%q) = %q does not round-trip: %q, %v", in, got, again, err)
		}
	})
}

func mustJSON(t *testing.T, list []string) string {
	t.Helper()
	if list == nil {
		return "[]"
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
