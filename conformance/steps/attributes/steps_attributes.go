package attributes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/report"
)

// attributeSteps check what the API server and the scheduler do with the
// newer kinds of device attributes: list-type attributes (KEP-5491),
// attributes a claim derives with CEL (KEP-6080), the standard numaNode
// attribute (KEP-6072, steps_numanode.go) and fractional request policy
// ranges of consumable capacity (KEP-5075, steps_fractional.go). Most of them
// publish pools of the kit's test driver, whose devices no kubelet plugin
// prepares: their pods are only ever checked to be scheduled.
func (w *world) attributeSteps() []kit.StepDef {
	steps := []kit.StepDef{
		{Pattern: `^the API server keeps list-type device attributes$`, Fn: w.apiServerKeepsListAttributes},
		{Pattern: `^a ResourceSlice "([^"]+)" of the test driver is submitted with (.+)$`, Fn: w.submitAttributeSlice},
		{Pattern: `^the test driver publishes a pool "([^"]+)" of devices with the int attribute "([^"]+)": (.+)$`, Fn: w.publishIntAttributePool},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the test driver's device "([^"]+)" and (\d+) more with (the same|a different) "([^"]+)"$`, Fn: w.claimWithConstraint},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting 1 device of the test driver whose "([^"]+)" includes (-?\d+)$`, Fn: w.claimIncludes},
		{Pattern: `^the claim "([^"]+)" is allocated exactly the test driver's devices (.+)$`, Fn: w.claimAllocatedTestDeviceSet},
		{Pattern: `^the API server keeps derived attributes in ResourceClaims$`, Fn: w.apiServerKeepsDerivedAttributes},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the test driver's device "([^"]+)" and (\d+) more with the same derived "([^"]+)", "([^"]+)" divided by (\d+)$`, Fn: w.claimWithDerivedConstraint},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting (\d+) devices with the same derived "([^"]+)", a copy of "([^"]+)"$`, Fn: w.claimDerivedCopy, Needs: kit.NeedsWhole(false, 1)},
	}
	steps = append(steps, w.numaNodeSteps()...)
	steps = append(steps, w.listAttributeSteps()...)
	return append(steps, w.fractionalSteps()...)
}

// testAttribute qualifies a test driver attribute name with the driver's
// domain; a name with a domain stays as it is.
func testAttribute(name string) resourceapi.QualifiedName {
	if strings.Contains(name, "/") {
		return resourceapi.QualifiedName(name)
	}
	return resourceapi.QualifiedName(kit.TestDriverName + "/" + name)
}

// testAttributeExpr is the CEL expression of a device's attribute name
// (as testAttribute qualifies it).
func testAttributeExpr(name string) string {
	domain, id, _ := strings.Cut(string(testAttribute(name)), "/")
	return fmt.Sprintf("device.attributes[%s].%s", strconv.Quote(domain), id)
}

// apiServerKeepsListAttributes skips the scenario when the API server drops
// list-type attributes (the alpha gate DRAListTypeAttributes is off): a
// dry-run create of a slice with an ints attribute shows whether it is
// stored.
func (w *world) apiServerKeepsListAttributes(ctx context.Context) (context.Context, error) {
	s := w.TestSlice("list-gate-check", "list-gate-check", 1)
	s.Spec.Devices = []resourceapi.Device{{Name: "dev", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		testAttribute("numa"): {IntValues: []int64{0, 1}},
	}}}
	got, err := w.Kube.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return ctx, fmt.Errorf("dry-run create of a ResourceSlice with a list attribute: %w", err)
	}
	if len(got.Spec.Devices) != 1 || len(got.Spec.Devices[0].Attributes[testAttribute("numa")].IntValues) != 2 {
		return kit.Skip(ctx, report.NotEligiblePrefix+"needs feature gate DRAListTypeAttributes: the API server drops list-type device attributes")
	}
	return ctx, nil
}

// Slices of submitAttributeSlice, valid or not (dra-1.37-spec.md §15,
// behaviours 1 and 2; §7, behaviour 4).
var attributeSlices = map[string]func(s *resourceapi.ResourceSlice){
	"an empty list attribute": nil, // raw JSON: client-go drops an empty list (omitempty)
	"a list attribute with a string of 65 characters": func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices = []resourceapi.Device{listDevice("dev", testAttribute("models"), resourceapi.DeviceAttribute{StringValues: []string{"a", strings.Repeat("x", 65)}})}
	},
	"a list attribute with a version that is not semver": func(s *resourceapi.ResourceSlice) {
		s.Spec.Devices = []resourceapi.Device{listDevice("dev", testAttribute("firmware"), resourceapi.DeviceAttribute{VersionValues: []string{"1.2.3", "1.2"}})}
	},
	"49 attribute values in two list attributes": func(s *resourceapi.ResourceSlice) { s.Spec.Devices = []resourceapi.Device{valuesDevice(24, 25)} },
	"48 attribute values in two list attributes": func(s *resourceapi.ResourceSlice) { s.Spec.Devices = []resourceapi.Device{valuesDevice(24, 24)} },
	"65 devices, one with a list attribute":      func(s *resourceapi.ResourceSlice) { s.Spec.Devices = manyDevices(65, true) },
	"64 devices, one with a list attribute":      func(s *resourceapi.ResourceSlice) { s.Spec.Devices = manyDevices(64, true) },
	"65 devices without a list attribute":        func(s *resourceapi.ResourceSlice) { s.Spec.Devices = manyDevices(65, false) },
}

// listDevice is a device with one attribute.
func listDevice(name string, attr resourceapi.QualifiedName, v resourceapi.DeviceAttribute) resourceapi.Device {
	return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{attr: v}}
}

// valuesDevice has two int list attributes of a and b elements: each
// element counts toward the 48 attribute values of a device.
func valuesDevice(a, b int) resourceapi.Device {
	ints := func(n int) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i)
		}
		return out
	}
	return resourceapi.Device{Name: "dev", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		testAttribute("a"): {IntValues: ints(a)},
		testAttribute("b"): {IntValues: ints(b)},
	}}
}

// manyDevices are n devices with an int attribute; the first has an int
// list instead when withList is set.
func manyDevices(n int, withList bool) []resourceapi.Device {
	out := make([]resourceapi.Device, n)
	for i := range out {
		out[i] = listDevice(fmt.Sprintf("dev-%d", i), testAttribute("numa"), resourceapi.DeviceAttribute{IntValue: ptr.To(int64(0))})
	}
	if withList {
		out[0].Attributes[testAttribute("numa")] = resourceapi.DeviceAttribute{IntValues: []int64{0, 1}}
	}
	return out
}

// submitAttributeSlice tries to create a one-slice pool of the test driver
// that the text describes and remembers the outcome for the "rejects it" and
// "accepts it" steps.
func (w *world) submitAttributeSlice(ctx context.Context, name, what string) error {
	if s, ok, err := w.fractionalSlice(name, what); ok || err != nil {
		if err == nil {
			w.SubmitSlice(ctx, s)
		}
		return err
	}
	build, ok := attributeSlices[what]
	if !ok {
		known := make([]string, 0, len(attributeSlices))
		for k := range attributeSlices {
			known = append(known, strconv.Quote(k))
		}
		slices.Sort(known)
		return fmt.Errorf("unknown ResourceSlice %q; the kit knows %s, and shared devices with a validRange", what, strings.Join(known, ", "))
	}
	s := w.TestSlice(name, name, 1)
	if build == nil {
		return w.submitSliceWithEmptyList(ctx, s)
	}
	build(s)
	w.SubmitSlice(ctx, s)
	return nil
}

// submitSliceWithEmptyList creates s with one device whose attribute
// "numa" is an empty int list. Go clients never send an empty list (the
// field is omitempty), so the kit writes the JSON itself: a driver in
// another language may well send one.
func (w *world) submitSliceWithEmptyList(ctx context.Context, s *resourceapi.ResourceSlice) error {
	s.Spec.Devices = []resourceapi.Device{{Name: "dev"}}
	s.APIVersion, s.Kind = resourceapi.SchemeGroupVersion.String(), "ResourceSlice"
	body, err := jsonWithEmptyList(s, string(testAttribute("numa")))
	if err != nil {
		return err
	}
	rc := w.Kube.ResourceV1().RESTClient()
	if c, ok := rc.(*rest.RESTClient); rc == nil || ok && c == nil {
		return fmt.Errorf("post ResourceSlice %s: the client cannot make raw requests (a fake clientset)", s.Name)
	}
	err = rc.Post().Resource("resourceslices").
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	if err == nil {
		w.Ledger.Add(kit.KindResourceSlice, s.Name)
	}
	w.Submitted = &kit.Submission{Kind: kit.KindResourceSlice, Name: s.Name, Err: err}
	return nil
}

// publishIntAttributePool publishes a one-slice pool of the test driver
// whose devices have the int attribute attr, as spec lists them:
// "anchor [1], near [0 1], far 2" (a list in brackets, a scalar without).
func (w *world) publishIntAttributePool(ctx context.Context, pool, attr, spec string) error {
	values, err := parseIntAttributes(spec)
	if err != nil {
		return err
	}
	var devices []resourceapi.Device
	for _, v := range values {
		devices = append(devices, resourceapi.Device{Name: v.device, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			kit.TestRoleAttribute: {StringValue: ptr.To(v.device)},
			testAttribute(attr):   v.value,
		}})
	}
	return w.PublishTestPool(ctx, pool, 0, devices...)
}

// deviceValue is one device of parseIntAttributes.
type deviceValue struct {
	device string
	value  resourceapi.DeviceAttribute
}

// parseIntAttributes reads "name value, name [v v …], …".
func parseIntAttributes(spec string) ([]deviceValue, error) {
	var out []deviceValue
	for _, item := range strings.Split(spec, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), " ")
		if !ok {
			return nil, fmt.Errorf("parse device %q of %q: want \"<device> <int>\" or \"<device> [<int> …]\"", item, spec)
		}
		value = strings.TrimSpace(value)
		list := strings.HasPrefix(value, "[") && strings.HasSuffix(value, "]")
		var ints []int64
		for _, f := range strings.Fields(strings.Trim(value, "[]")) {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("parse value of device %s in %q: %w", name, spec, err)
			}
			ints = append(ints, n)
		}
		v := deviceValue{device: name}
		switch {
		case list && len(ints) > 0:
			v.value.IntValues = ints
		case !list && len(ints) == 1:
			v.value.IntValue = &ints[0]
		default:
			return nil, fmt.Errorf("parse value %q of device %s: want one int or a non-empty list of ints in brackets", value, name)
		}
		out = append(out, v)
	}
	return out, nil
}

// roleSelector selects the test driver's device by its role.
func roleSelector(role string, equal bool) string {
	op := "=="
	if !equal {
		op = "!="
	}
	return fmt.Sprintf(`device.attributes[%s].?role.orValue("") %s %s`, strconv.Quote(kit.TestDriverName), op, strconv.Quote(role))
}

// anchoredSpec asks for the test driver's device anchor (request
// "anchor") and n other devices of the scenario's pools (request "others").
func (w *world) anchoredSpec(ctx context.Context, anchor string, n int64) (resourceapi.ResourceClaimSpec, error) {
	class, err := w.TestDeviceClass(ctx)
	if err != nil {
		return resourceapi.ResourceClaimSpec{}, err
	}
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		kit.ExactRequest("anchor", class, 1, roleSelector(anchor, true)),
		kit.ExactRequest("others", class, n, roleSelector(anchor, false)),
	}}}, nil
}

// claimWithConstraint asks for the anchor and n more devices that all have
// the same value of attr (matchAttribute), or pairwise different values
// (distinctAttribute).
func (w *world) claimWithConstraint(ctx context.Context, name, anchor string, n int64, relation, attr string) error {
	spec, err := w.anchoredSpec(ctx, anchor, n)
	if err != nil {
		return err
	}
	full := resourceapi.FullyQualifiedName(testAttribute(attr))
	c := resourceapi.DeviceConstraint{MatchAttribute: &full}
	if relation == "a different" {
		c = resourceapi.DeviceConstraint{DistinctAttribute: &full}
	}
	spec.Devices.Constraints = []resourceapi.DeviceConstraint{c}
	return w.CreateClaim(ctx, kit.NewClaim(name, spec))
}

// claimIncludes asks for one device whose attribute includes v, with the
// CEL function includes() of KEP-5491, which works on lists and scalars.
func (w *world) claimIncludes(ctx context.Context, name, attr string, v int64) error {
	class, err := w.TestDeviceClass(ctx)
	if err != nil {
		return err
	}
	// No optional chaining here: on .?attr.orValue(...) the cost estimate of
	// includes() is unbounded and the API server rejects the selector as too
	// complex. The scenario's DeviceClass admits only its own devices, which
	// all have the attribute, before this selector runs.
	sel := fmt.Sprintf("%s.includes(%d)", testAttributeExpr(attr), v)
	return w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(class, 1, sel)))
}

// claimAllocatedTestDeviceSet checks that the claim holds exactly the test
// driver's devices listed as `"a", "b" and "c"`, in any order.
func (w *world) claimAllocatedTestDeviceSet(ctx context.Context, claim, list string) error {
	var want []string
	for _, f := range strings.Split(strings.ReplaceAll(list, " and ", ","), ",") {
		if f = strings.Trim(strings.TrimSpace(f), `"`); f != "" {
			want = append(want, f)
		}
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil {
		return fmt.Errorf("claim %s is not allocated, expected the test driver's devices %s", claim, strings.Join(want, ", "))
	}
	var got []string
	for _, r := range kit.DriverResults(c, kit.TestDriverName) {
		got = append(got, r.Device)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("claim %s is allocated the test driver's devices %s, expected %s", claim, strings.Join(got, ", "), strings.Join(want, ", "))
	}
	return nil
}

// apiServerKeepsDerivedAttributes skips the scenario when the API server
// drops derivedAttributes from claims (the alpha gate DRADerivedAttributes
// is off): a dry-run create shows whether they are stored.
func (w *world) apiServerKeepsDerivedAttributes(ctx context.Context) (context.Context, error) {
	claim := kit.NewClaim("derived-gate-check", kit.DerivedSpec(w.Driver.DeviceClass(), "derived/driver", "device.driver", true))
	got, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Create(ctx, claim, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return ctx, fmt.Errorf("dry-run create of a ResourceClaim with a derived attribute: %w", err)
	}
	if r := got.Spec.Devices.Requests; len(r) == 0 || r[0].Exactly == nil || len(r[0].Exactly.DerivedAttributes) == 0 {
		return kit.Skip(ctx, report.NotEligiblePrefix+"needs feature gate DRADerivedAttributes: the API server drops derivedAttributes from ResourceClaims")
	}
	return ctx, nil
}

// claimWithDerivedConstraint asks for the anchor and n more devices whose
// derived attribute, the int attribute attr divided by div for each
// candidate of both requests, is the same. A name in the test driver's
// domain shadows the physical attribute of that name in the constraint.
func (w *world) claimWithDerivedConstraint(ctx context.Context, name, anchor string, n int64, derived, attr string, div int) error {
	spec, err := w.anchoredSpec(ctx, anchor, n)
	if err != nil {
		return err
	}
	expr := fmt.Sprintf("%s / %d", testAttributeExpr(attr), div)
	full := resourceapi.FullyQualifiedName(testAttribute(derived))
	for i := range spec.Devices.Requests {
		spec.Devices.Requests[i].Exactly.DerivedAttributes = []resourceapi.DeviceDerivedAttribute{{Name: full, Expression: expr}}
	}
	spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &full}}
	return w.CreateClaim(ctx, kit.NewClaim(name, spec))
}

// claimDerivedCopy asks for n devices of the driver's DeviceClass whose
// derived attribute, a copy of the driver's attribute attr, is the same.
func (w *world) claimDerivedCopy(ctx context.Context, name string, n int64, derived, attr string) error {
	domain, id, ok := strings.Cut(attr, "/")
	if !ok {
		domain, id = w.Driver.DriverName, attr
	}
	spec := kit.DerivedSpec(w.Driver.DeviceClass(), derived, fmt.Sprintf("device.attributes[%s].%s", strconv.Quote(domain), id), true)
	spec.Devices.Requests[0].Exactly.Count = n
	return w.CreateClaim(ctx, kit.NewClaim(name, spec))
}

// jsonWithEmptyList is s as JSON with an empty int list as the attribute
// attr of its first device.
func jsonWithEmptyList(s *resourceapi.ResourceSlice, attr string) ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode ResourceSlice %s: %w", s.Name, err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("decode ResourceSlice %s: %w", s.Name, err)
	}
	spec, _ := obj["spec"].(map[string]any)
	devices, _ := spec["devices"].([]any)
	if len(devices) == 0 {
		return nil, fmt.Errorf("ResourceSlice %s has no device to give an empty list", s.Name)
	}
	first, ok := devices[0].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("ResourceSlice %s: its first device is not a JSON object", s.Name)
	}
	first["attributes"] = map[string]any{attr: map[string]any{"ints": []any{}}}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode ResourceSlice %s: %w", s.Name, err)
	}
	return out, nil
}
