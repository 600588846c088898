package prioritized

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
)

// prioritizedSteps are KEP-4816's: claims whose request lists
// alternatives (firstAvailable subrequests) of the driver's DeviceClass,
// and what the scheduler chose and passed on. The prioritized lists of
// partitions and whole devices are in steps_partitions.go.
func (w *world) prioritizedSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^a ResourceClaim "([^"]+)" requesting first (\d+) devices? as "([^"]+)", else (\d+) devices? as "([^"]+)"$`, Fn: w.claimFirstAvailable, Needs: needsLargerCount(1, 3)},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting first more devices than the scenario may use as "([^"]+)", else (\d+) devices? as "([^"]+)"(, with opaque config for each subrequest and for the request)?$`, Fn: w.claimFirstTooMany, Needs: kit.NeedsWhole(false, 2)},
		{Pattern: `^a ResourceClaim "([^"]+)" with request "([^"]+)" for 1 device and request "([^"]+)" for 1 device, first as "([^"]+)" with the identity of the device of "([^"]+)", else as "([^"]+)"$`, Fn: w.claimConstrainedSubrequest, Needs: func(n *kit.ScenarioNeeds, _ []string) { n.WholeClaims += 2 }},
		{Pattern: `^the claim "([^"]+)" is allocated for exactly the requests ((?:"[^"]+"(?:, | and )?)+)$`, Fn: w.claimAllocatedForRequests},
		{Pattern: `^the kubelet recorded the devices the driver prepared for the claim "([^"]+)" under request "([^"]+)" alone$`, Fn: w.preparedUnderRequest},
		{Pattern: `^the allocation of the claim "([^"]+)" passes the driver the claim's config for exactly ((?:"[^"]+"(?:, | and )?)+)$`, Fn: w.allocationPassesConfig},
		{Pattern: `^a ResourceClaim "([^"]+)" with (a subrequest that has its own firstAvailable|a subrequest with adminAccess) is posted with strict field validation$`, Fn: w.submitClaimStrict},
		{Pattern: `^the API server rejects it as a bad request naming the unknown field "([^"]+)"$`, Fn: w.rejectedUnknownField},
	}
}

// needsLargerCount leases as many whole devices as the larger of the two
// counts the step names.
func needsLargerCount(a, b int) func(*kit.ScenarioNeeds, []string) {
	return func(n *kit.ScenarioNeeds, args []string) {
		x, errA := strconv.Atoi(args[a])
		y, errB := strconv.Atoi(args[b])
		if errA != nil || errB != nil {
			return // godog reports the bad argument when the step runs
		}
		n.WholeClaims += max(x, y)
	}
}

func (w *world) claimFirstAvailable(ctx context.Context, name string, first int, firstName string, second int, secondName string) error {
	class := w.Driver.DeviceClass()
	spec := kit.FirstAvailableSpec(kit.SubRequest(firstName, class, int64(first)), kit.SubRequest(secondName, class, int64(second)))
	return w.CreateClaim(ctx, kit.NewClaim(name, spec))
}

// leasedWholeDevices counts the whole devices the scenario may use.
func (w *world) leasedWholeDevices(ctx context.Context) int {
	n := 0
	for _, u := range w.LeasedUnits(ctx) {
		n += len(u.Whole)
	}
	return n
}

// configMarker is the key of the opaque parameters the kit passes in
// claim config; its value names the request or subrequest the entry is for.
const configMarker = "drakitConfigFor"

// configMarkerDriver is the opaque.driver of the kit's marked config
// entries: a driver name no driver has, so the driver under test (which
// decodes only entries for its own name) is never handed parameters it did
// not define, while the scheduler copies the entries into the allocation
// by their requests alone, which is what the kit checks.
const configMarkerDriver = "config.conformance.drakit.dev"

// opaqueConfigFor is a claim config entry for the kit's marker driver that
// names the request it applies to in its parameters.
func opaqueConfigFor(request string) (resourceapi.DeviceClaimConfiguration, error) {
	raw, err := json.Marshal(map[string]string{configMarker: request})
	if err != nil {
		return resourceapi.DeviceClaimConfiguration{}, fmt.Errorf("encode config parameters for %s: %w", request, err)
	}
	return resourceapi.DeviceClaimConfiguration{
		Requests: []string{request},
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver: configMarkerDriver, Parameters: runtime.RawExtension{Raw: raw},
		}},
	}, nil
}

// claimFirstTooMany asks first for one device more than the scenario
// leased, which no node can satisfy within the lease, then for count
// devices; with config, one opaque entry per subrequest and one for the
// whole request.
func (w *world) claimFirstTooMany(ctx context.Context, name, tooMany string, count int, fallback, withConfig string) error {
	class := w.Driver.DeviceClass()
	spec := kit.FirstAvailableSpec(kit.SubRequest(tooMany, class, int64(w.leasedWholeDevices(ctx)+1)), kit.SubRequest(fallback, class, int64(count)))
	if withConfig != "" {
		for _, r := range []string{kit.RequestName + "/" + tooMany, kit.RequestName + "/" + fallback, kit.RequestName} {
			c, err := opaqueConfigFor(r)
			if err != nil {
				return err
			}
			spec.Devices.Config = append(spec.Devices.Config, c)
		}
	}
	return w.CreateClaim(ctx, kit.NewClaim(name, spec))
}

// claimConstrainedSubrequest asks for one device in request first and one
// in request second, whose first subrequest must have the identity of the
// device of first: a matchAttribute constraint on the identity attribute
// over first and second/<same>, which two devices never satisfy, so the
// scheduler must pick second's next subrequest.
func (w *world) claimConstrainedSubrequest(ctx context.Context, name, first, second, same, boundTo, other string) error {
	if boundTo != first {
		return fmt.Errorf("claim %s: subrequest %s can be bound to the identity of request %s only, not %q", name, same, first, boundTo)
	}
	class := w.Driver.DeviceClass()
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		kit.ExactRequest(first, class, 1),
		{Name: second, FirstAvailable: []resourceapi.DeviceSubRequest{kit.SubRequest(same, class, 1), kit.SubRequest(other, class, 1)}},
	}}}
	domain, id := observe.SplitAttribute(w.Driver.DriverName, w.Driver.UUIDAttribute)
	identity := resourceapi.FullyQualifiedName(domain + "/" + id)
	spec.Devices.Constraints = []resourceapi.DeviceConstraint{{Requests: []string{first, second + "/" + same}, MatchAttribute: &identity}}
	return w.CreateClaim(ctx, kit.NewClaim(name, spec))
}

// quotedList returns the names in `"a", "b" and "c"`.
func quotedList(list string) []string {
	var out []string
	for _, m := range kit.QuotedName.FindAllStringSubmatch(list, -1) {
		out = append(out, m[1])
	}
	return out
}

// claimAllocatedForRequests checks that the claim's results of the driver
// name exactly these requests (a subrequest as request/subrequest), one
// result each, each on a device of its own.
func (w *world) claimAllocatedForRequests(ctx context.Context, claim, list string) error {
	want := kit.SortedCopy(quotedList(list))
	results, _, err := w.AllocatedResults(ctx, claim)
	if err != nil {
		return err
	}
	var got []string
	devices := map[string]string{}
	var bad []string
	for _, r := range results {
		got = append(got, r.Request)
		id := r.Pool + "/" + r.Device
		if prev, dup := devices[id]; dup {
			bad = append(bad, fmt.Sprintf("claim %s: device %s is allocated for both %s and %s", claim, id, prev, r.Request))
		}
		devices[id] = r.Request
	}
	got = kit.SortedCopy(got)
	if !slices.Equal(got, want) {
		bad = append(bad, fmt.Sprintf("claim %s: the allocation results name the requests %s, expected %s", claim, strings.Join(got, ", "), strings.Join(want, ", ")))
	}
	return kit.Findings(bad)
}

// allocationPassesConfig checks the config of the claim's allocation, which
// the driver reads when it prepares the claim: its entries from the claim
// (source FromClaim) of the kit's marker driver must be exactly those the
// kit wrote for the listed requests, each still naming its request or, as
// kube-scheduler writes an entry that covers every request of the claim,
// none (all). The scheduler's work, not the driver's.
func (w *world) allocationPassesConfig(ctx context.Context, claim, list string) error {
	want := kit.SortedCopy(quotedList(list))
	if _, _, err := w.AllocatedResults(ctx, claim); err != nil {
		return err
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	var got, bad []string
	for _, cfg := range c.Status.Allocation.Devices.Config {
		if cfg.Source != resourceapi.AllocationConfigSourceClaim || cfg.Opaque == nil || cfg.Opaque.Driver != configMarkerDriver {
			continue
		}
		var params map[string]string
		if err := json.Unmarshal(cfg.Opaque.Parameters.Raw, &params); err != nil {
			bad = append(bad, fmt.Sprintf("claim %s: allocation config for %v has parameters that are not the kit's: %s", claim, cfg.Requests, cfg.Opaque.Parameters.Raw))
			continue
		}
		got = append(got, params[configMarker])
		// The allocator keeps the entry's requests, or clears them when the
		// entry covers every request of the claim (then it applies to all).
		if len(cfg.Requests) != 0 && !slices.Equal(cfg.Requests, []string{params[configMarker]}) {
			bad = append(bad, fmt.Sprintf("claim %s: the allocation's config written for %s applies to requests %v", claim, params[configMarker], cfg.Requests))
		}
	}
	got = kit.SortedCopy(got)
	if !slices.Equal(got, want) {
		bad = append(bad, fmt.Sprintf("claim %s: status.allocation.devices.config passes the driver the claim's config for %s, expected exactly %s", claim, strings.Join(got, ", "), strings.Join(want, ", ")))
	}
	return kit.Findings(bad)
}

// preparedUnderRequest checks the request names the driver returned from
// NodePrepareResources for the claim's devices, as the kubelet recorded
// them: the kubelet maps a container's claims[].request to devices by the
// request's name, so a device allocated for request/subrequest must be
// returned for the request alone (the kubeletplugin library strips the
// subrequest).
func (w *world) preparedUnderRequest(ctx context.Context, claim, request string) (context.Context, error) {
	if w.Cfg.NodeKubeletRootDir == "" {
		return kit.Skip(ctx, kit.KubeletStateSkipReason)
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return ctx, fmt.Errorf("get claim %s: %w", claim, err)
	}
	state, err := kit.ReadKubeletDRAState(w.Cfg.NodeKubeletRootDir)
	if err != nil {
		return ctx, err
	}
	prepared, ok := state[string(c.UID)]
	if !ok {
		return ctx, fmt.Errorf("claim %s (uid %s): the kubelet records no preparation of it", claim, c.UID)
	}
	devices := prepared.DriverState[w.Driver.DriverName].Devices
	if len(devices) == 0 {
		return ctx, fmt.Errorf("claim %s: the kubelet records no device that driver %s prepared for it", claim, w.Driver.DriverName)
	}
	var bad []string
	for _, d := range devices {
		if !slices.Equal(d.RequestNames, []string{request}) {
			bad = append(bad, fmt.Sprintf("claim %s: driver %s returned device %s/%s for requests %v, expected [%s] (a subrequest's device is the request's)", claim, w.Driver.DriverName, d.PoolName, d.DeviceName, d.RequestNames, request))
		}
	}
	return ctx, kit.Findings(bad)
}

// strictDefects add a field that the v1 DeviceSubRequest does not have to
// the first subrequest of a valid prioritized-list claim.
var strictDefects = map[string]func(class string) (string, any){
	"a subrequest that has its own firstAvailable": func(class string) (string, any) {
		return "firstAvailable", []map[string]any{{"name": "nested", "deviceClassName": class}}
	},
	"a subrequest with adminAccess": func(class string) (string, any) {
		return "adminAccess", true
	},
}

// submitClaimStrict posts the claim as JSON with fieldValidation=Strict,
// so that the API server answers a field the type does not have with an
// error instead of dropping it.
func (w *world) submitClaimStrict(ctx context.Context, name, defect string) error {
	class := w.Driver.DeviceClass()
	field, value := strictDefects[defect](class)
	sub := map[string]any{"name": "first", "deviceClassName": class, field: value}
	body, err := json.Marshal(map[string]any{
		"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
		"metadata": map[string]any{"name": name, "labels": map[string]string{kit.LabelManagedBy: kit.ManagedByKit}},
		"spec": map[string]any{"devices": map[string]any{"requests": []any{
			map[string]any{"name": kit.RequestName, "firstAvailable": []any{sub}},
		}}},
	})
	if err != nil {
		return fmt.Errorf("encode claim %s: %w", name, err)
	}
	rc := w.Kube.ResourceV1().RESTClient()
	if c, ok := rc.(*rest.RESTClient); rc == nil || ok && c == nil {
		return fmt.Errorf("post claim %s: the client cannot make raw requests (a fake clientset)", name)
	}
	err = rc.Post().Namespace(w.Ns).Resource("resourceclaims").
		Param("fieldValidation", "Strict").Body(body).Do(ctx).Error()
	if err == nil {
		w.Ledger.Add(kit.KindClaim, name)
	}
	w.Submitted = &kit.Submission{Kind: kit.KindClaim, Name: name, Err: err}
	return nil
}

func (w *world) rejectedUnknownField(field string) error {
	s, err := w.LastSubmission()
	if err != nil {
		return err
	}
	if s.Err == nil {
		return fmt.Errorf("the API server accepted %s with strict field validation; expected 400 BadRequest naming the unknown field %s", s.Label(), field)
	}
	if !apierrors.IsBadRequest(s.Err) {
		return fmt.Errorf("%s was rejected, but not as BadRequest (reason %s): %v", s.Label(), apierrors.ReasonForError(s.Err), s.Err)
	}
	if want := fmt.Sprintf("unknown field %q", field); !strings.Contains(s.Err.Error(), want) {
		return fmt.Errorf("%s was rejected as BadRequest, but the error does not say %s: %v", s.Label(), want, s.Err)
	}
	return nil
}
