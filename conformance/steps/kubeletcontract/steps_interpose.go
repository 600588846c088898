package kubeletcontract

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cucumber/godog"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/conformance/interpose"
	"drakit.dev/drakit/conformance/kit"
)

// interposeSteps check the kubelet's contract with the driver (the DRA
// spec §17.2: idempotent prepare and unprepare, retries, per-claim errors)
// through drakit interpose between the node's kubelet and the driver: they
// arm its faults for the kubelet's next call, read its records of what the
// kubelet asked and the driver answered, and call the driver through it.
func (w *world) interposeSteps() []kit.StepDef {
	return []kit.StepDef{
		// Faults are armed for the kubelet's next call, whoever makes it:
		// the scenario runs alone.
		{Pattern: `^the driver is behind the kit's interposer$`, Fn: w.behindInterposer, Needs: kit.NeedsExclusive},
		{Pattern: `^the interposer fails the kubelet's next NodePrepareResources with (\w+) after the driver answered$`, Fn: w.armPrepareError},
		{Pattern: `^the interposer drops the kubelet's connection in its next NodePrepareResources after the driver answered$`, Fn: w.armPrepareDrop},
		{Pattern: `^the interposer holds the kubelet's next NodePrepareResources past the kubelet's timeout after the driver answered$`, Fn: w.armPrepareTimeout},
		{Pattern: `^the interposer fails the kubelet's next NodeUnprepareResources with (\w+) after the driver answered$`, Fn: w.armUnprepareError},
		{Pattern: `^the kubelet's NodeUnprepareResources of the claim "([^"]+)" failed once after the driver unprepared it, and the retry succeeded$`, Fn: w.unprepareRetried},
		{Pattern: `^the interposer answers the kubelet's next NodePrepareResources with an error for the claim "([^"]+)"$`, Fn: w.armClaimError},
		{Pattern: `^the kubelet's NodePrepareResources of the claim "([^"]+)" failed once after the driver prepared it, and the retry got the same CDI devices$`, Fn: w.prepareRetried},
		{Pattern: `^the kubelet got the error for the claim "([^"]+)" alone, and its retry prepared it$`, Fn: w.claimErrorRetried},
		{Pattern: `^the driver prepares the claim "([^"]+)" again with the same CDI devices$`, Fn: w.preparedAgain},
		{Pattern: `^each CDI device of the claim "([^"]+)" is defined once on the node$`, Fn: w.cdiDevicesOnce},
		{Pattern: `^the driver unprepares the claim "([^"]+)" again, successfully$`, Fn: w.unpreparedAgain},
		{Pattern: `^the driver unprepares a claim it never prepared, successfully$`, Fn: w.unprepareNeverPrepared},
		{Pattern: `^the driver answers a prepare of the claim "([^"]+)" together with a claim that does not exist without preparing the missing one$`, Fn: w.prepareWithMissing},
		{Pattern: `^the kubelet's NodeUnprepareResources of the claim "([^"]+)" reached the driver and succeeded$`, Fn: w.kubeletUnprepared},
	}
}

// interposeSkipReason explains why the @interpose scenarios do not apply.
const interposeSkipReason = "the kit has no interposer between the kubelet and the driver: no --interpose (start drakit interpose " +
	"in front of the driver and give its control address)"

// interposerKey holds the scenario's interposer in its context.
type interposerKey struct{}

// scenarioInterposer is the interposer as a scenario sees it: its client
// and the last record before the scenario began.
type scenarioInterposer struct {
	client *interpose.Client
	mark   int64
}

// behindInterposer checks that the configured interposer serves the
// driver under test, registered with the kubelet, and keeps it in the
// scenario's context; the scenario's cleanup disarms every rule.
func (w *world) behindInterposer(ctx context.Context) (context.Context, error) {
	if w.Cfg.Interpose == "" {
		return kit.Skip(ctx, interposeSkipReason)
	}
	c, err := interpose.NewClient(w.Cfg.Interpose)
	if err != nil {
		return ctx, err
	}
	err = kit.Poll(ctx, w.Cfg.Timeouts.API, fmt.Sprintf("the interposer at %s to be registered with the kubelet for %s", w.Cfg.Interpose, w.Driver.DriverName), func(ctx context.Context) (bool, string, error) {
		info, err := c.Info(ctx)
		switch {
		case err != nil:
			return false, err.Error(), nil
		case info.Driver != w.Driver.DriverName:
			return false, "", fmt.Errorf("the interposer at %s serves driver %s, not the driver under test %s", w.Cfg.Interpose, info.Driver, w.Driver.DriverName)
		}
		return info.Registered, "the kubelet has not reported the registration yet", nil
	})
	if err != nil {
		return ctx, err
	}
	if _, err := c.ClearRules(ctx); err != nil {
		return ctx, err
	}
	w.Releases = append(w.Releases, func() error {
		_, err := c.ClearRules(context.Background())
		return err
	})
	recs, err := c.Records(ctx, interpose.Filter{})
	if err != nil {
		return ctx, err
	}
	si := &scenarioInterposer{client: c}
	if len(recs) > 0 {
		si.mark = recs[len(recs)-1].Seq
	}
	return context.WithValue(ctx, interposerKey{}, si), nil
}

func (w *world) interposer(ctx context.Context) (*scenarioInterposer, error) {
	si, ok := ctx.Value(interposerKey{}).(*scenarioInterposer)
	if !ok {
		return nil, fmt.Errorf("%s (the scenario must start with \"the driver is behind the kit's interposer\")", interposeSkipReason)
	}
	return si, nil
}

func (w *world) arm(ctx context.Context, r interpose.Rule) error {
	r.Method = interpose.MethodPrepare
	return w.armFor(ctx, r)
}

// armFor arms r, for r.Method, for the next call.
func (w *world) armFor(ctx context.Context, r interpose.Rule) error {
	si, err := w.interposer(ctx)
	if err != nil {
		return err
	}
	r.Times = 1
	_, err = si.client.AddRule(ctx, r)
	return err
}

// kubeletCallTimeout is how long the kubelet waits for a DRA call (its
// default, DRA spec §17.2); the interposer holds a call longer than that to
// have the kubelet abandon it.
const kubeletCallTimeout = 45 * time.Second

func (w *world) armPrepareTimeout(ctx context.Context) error {
	return w.arm(ctx, interpose.Rule{Point: interpose.PointAfter, Delay: (kubeletCallTimeout + 15*time.Second).String()})
}

func (w *world) armUnprepareError(ctx context.Context, code string) error {
	return w.armFor(ctx, interpose.Rule{Method: interpose.MethodUnprepare, Point: interpose.PointAfter,
		Error: &interpose.StatusError{Code: code, Message: "injected by the conformance kit"}})
}

// unprepareRetried checks that the kubelet's first NodeUnprepareResources
// of the claim failed by the armed fault after the driver unprepared it,
// and that a retry reached the driver and succeeded.
func (w *world) unprepareRetried(ctx context.Context, claim string) (context.Context, error) {
	var recs []interpose.Record
	var ref interpose.ClaimRef
	err := kit.Poll(ctx, w.Cfg.Timeouts.Cleanup, fmt.Sprintf("the kubelet to retry NodeUnprepareResources of claim %s", claim), func(ctx context.Context) (bool, string, error) {
		var err error
		recs, ref, err = w.kubeletCalls(ctx, interpose.MethodUnprepare, claim)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(recs) >= 2 && recs[len(recs)-1].OK(), describeCalls(recs), nil
	})
	ctx = godog.Attach(ctx, godog.Attachment{FileName: "interposer-calls.txt", MediaType: "text/plain", Body: []byte(describeCalls(recs))})
	if err != nil {
		return ctx, err
	}
	var list []string
	first := recs[0]
	c, _ := first.Claim(ref.UID)
	switch {
	case first.OK() || len(first.Faults) == 0:
		list = append(list, fmt.Sprintf("the kubelet's first NodeUnprepareResources of claim %s did not fail by the armed fault (%s)", claim, describeCalls(recs[:1])))
	case first.DriverCode != "OK" || !c.Answered || c.Error != "":
		list = append(list, fmt.Sprintf("the driver did not unprepare claim %s in the first call (driver status %s %s, claim error %q)", claim, first.DriverCode, first.DriverMessage, c.Error))
	}
	last := recs[len(recs)-1]
	if lc, _ := last.Claim(ref.UID); !lc.Answered || lc.Error != "" {
		list = append(list, fmt.Sprintf("the kubelet's retry of NodeUnprepareResources of claim %s: error %q", claim, lc.Error))
	}
	return ctx, kit.Findings(list)
}

func (w *world) armPrepareError(ctx context.Context, code string) error {
	return w.arm(ctx, interpose.Rule{Point: interpose.PointAfter, Error: &interpose.StatusError{Code: code, Message: "injected by the conformance kit"}})
}

func (w *world) armPrepareDrop(ctx context.Context) error {
	return w.arm(ctx, interpose.Rule{Point: interpose.PointAfter, Drop: true})
}

func (w *world) armClaimError(ctx context.Context, claim string) error {
	return w.arm(ctx, interpose.Rule{Point: interpose.PointAfter, Claim: w.Ns + "/" + claim, ClaimError: "injected by the conformance kit"})
}

// kubeletCalls are the interposer's records of the kubelet's calls of
// method for the claim (a ResourceClaim of the scenario) since the
// scenario began, and the claim.
func (w *world) kubeletCalls(ctx context.Context, method, claim string) ([]interpose.Record, interpose.ClaimRef, error) {
	si, err := w.interposer(ctx)
	if err != nil {
		return nil, interpose.ClaimRef{}, err
	}
	rec, _, err := w.ClaimRef(ctx, claim, "")
	if err != nil {
		return nil, interpose.ClaimRef{}, err
	}
	ref := interpose.ClaimRef{Namespace: w.Ns, Name: rec.Name, UID: string(rec.UID)}
	recs, err := si.client.Records(ctx, interpose.Filter{Method: method, Source: interpose.SourceKubelet, ClaimUID: ref.UID, After: si.mark})
	return recs, ref, err
}

// prepared is the claim's CDI device IDs in a record where the driver
// prepared it, sorted; ok is false when it did not.
func prepared(r interpose.Record, uid string) (ids []string, ok bool) {
	c, found := r.Claim(uid)
	if !found || r.DriverCode != "OK" || !c.Answered || c.Error != "" {
		return nil, false
	}
	return kit.SortedCopy(c.CDIDeviceIDs()), true
}

// lastPrepared is the claim's CDI device IDs of the kubelet's last
// successful NodePrepareResources.
func lastPrepared(recs []interpose.Record, uid string) ([]string, error) {
	for i := len(recs) - 1; i >= 0; i-- {
		if ids, ok := prepared(recs[i], uid); ok && recs[i].OK() && recs[i].Claims != nil {
			if c, _ := recs[i].Claim(uid); c.InjectedError == "" {
				return ids, nil
			}
		}
	}
	return nil, fmt.Errorf("the interposer recorded no successful NodePrepareResources of the kubelet for claim uid %s (%d calls: %s)", uid, len(recs), describeCalls(recs))
}

func describeCalls(recs []interpose.Record) string {
	var out []string
	for _, r := range recs {
		s := fmt.Sprintf("#%d %s %s", r.Seq, r.Method, r.Code)
		if len(r.Faults) > 0 {
			s += " faults " + strings.Join(r.Faults, "; ")
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// prepareRetried checks that the kubelet's first NodePrepareResources of
// the claim failed by the armed fault after the driver had prepared it,
// and that a later one succeeded with the same CDI devices (the driver's
// prepare is idempotent).
func (w *world) prepareRetried(ctx context.Context, claim string) (context.Context, error) {
	recs, ref, err := w.kubeletCalls(ctx, interpose.MethodPrepare, claim)
	if err != nil {
		return ctx, err
	}
	if len(recs) < 2 {
		return ctx, fmt.Errorf("claim %s: the kubelet called NodePrepareResources %d times (%s), want a failed call and a retry", claim, len(recs), describeCalls(recs))
	}
	first := recs[0]
	firstIDs, ok := prepared(first, ref.UID)
	var list []string
	switch {
	case first.OK() || len(first.Faults) == 0:
		list = append(list, fmt.Sprintf("the kubelet's first NodePrepareResources of claim %s did not fail by the armed fault (%s)", claim, describeCalls(recs[:1])))
	case !ok:
		list = append(list, fmt.Sprintf("the driver did not prepare claim %s in the first call (driver status %s %s)", claim, first.DriverCode, first.DriverMessage))
	}
	last, err := lastPrepared(recs[1:], ref.UID)
	if err != nil {
		list = append(list, err.Error())
	} else if ok && !slices.Equal(firstIDs, last) {
		list = append(list, fmt.Sprintf("the driver prepared claim %s with CDI devices %v, and with %v when the kubelet retried", claim, firstIDs, last))
	}
	ctx = godog.Attach(ctx, godog.Attachment{FileName: "interposer-calls.txt", MediaType: "text/plain", Body: []byte(describeCalls(recs))})
	return ctx, kit.Findings(list)
}

// claimErrorRetried checks that the kubelet's first NodePrepareResources
// with the claim got the injected per-claim error for it alone (its other
// claims were prepared), and that a retry prepared it.
func (w *world) claimErrorRetried(ctx context.Context, claim string) error {
	recs, ref, err := w.kubeletCalls(ctx, interpose.MethodPrepare, claim)
	if err != nil {
		return err
	}
	if len(recs) < 2 {
		return fmt.Errorf("claim %s: the kubelet called NodePrepareResources %d times (%s), want the failed call and a retry", claim, len(recs), describeCalls(recs))
	}
	var list []string
	for _, c := range recs[0].Claims {
		switch {
		case c.UID == ref.UID && c.InjectedError == "":
			list = append(list, fmt.Sprintf("the kubelet's first NodePrepareResources did not get the injected error for claim %s", claim))
		case c.UID != ref.UID && (c.InjectedError != "" || c.Error != "" || !c.Answered):
			list = append(list, fmt.Sprintf("claim %s of the same call was not prepared (error %q, injected %q)", c.Name, c.Error, c.InjectedError))
		}
	}
	if _, err := lastPrepared(recs[1:], ref.UID); err != nil {
		list = append(list, err.Error())
	}
	return kit.Findings(list)
}

// preparedAgain calls the driver's NodePrepareResources for the prepared
// claim once more: it must return the CDI devices the kubelet got.
func (w *world) preparedAgain(ctx context.Context, claim string) error {
	recs, ref, err := w.kubeletCalls(ctx, interpose.MethodPrepare, claim)
	if err != nil {
		return err
	}
	want, err := lastPrepared(recs, ref.UID)
	if err != nil {
		return err
	}
	si, _ := w.interposer(ctx)
	again, err := w.direct(ctx, func() (interpose.Record, error) { return si.client.Prepare(ctx, ref) })
	if err != nil {
		return err
	}
	got, ok := prepared(again, ref.UID)
	switch {
	case !ok || !again.OK():
		c, _ := again.Claim(ref.UID)
		return fmt.Errorf("a repeated NodePrepareResources of prepared claim %s failed: status %s %s, claim error %q", claim, again.Code, again.Message, c.Error)
	case !slices.Equal(got, want):
		return fmt.Errorf("a repeated NodePrepareResources of prepared claim %s returned CDI devices %v, the kubelet was given %v", claim, got, want)
	}
	return nil
}

// direct makes a direct call of the driver, repeating it while the driver
// is not listening (status Unavailable): a restarted driver's pod is ready
// before it serves its socket again, which the kubelet, behind the
// interposer, never notices.
func (w *world) direct(ctx context.Context, call func() (interpose.Record, error)) (interpose.Record, error) {
	var rec interpose.Record
	err := kit.Poll(ctx, w.Cfg.Timeouts.PodStart, "the driver to serve its DRA socket", func(context.Context) (bool, string, error) {
		var err error
		if rec, err = call(); err != nil {
			return false, "", err
		}
		return rec.Code != "Unavailable", rec.Message, nil
	})
	return rec, err
}

// cdiDevicesOnce checks that every CDI device the kubelet was given for
// the claim is defined exactly once in the node's CDI specs: a device
// prepared twice (by a prepare and its retry) shows as two definitions.
func (w *world) cdiDevicesOnce(ctx context.Context, claim string) error {
	dir, err := w.CdiDir()
	if err != nil {
		return err
	}
	recs, ref, err := w.kubeletCalls(ctx, interpose.MethodPrepare, claim)
	if err != nil {
		return err
	}
	ids, err := lastPrepared(recs, ref.UID)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read the node's CDI directory: %w", err)
	}
	defined := map[string][]string{}
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.Type().IsRegular() || (ext != ".json" && ext != ".yaml" && ext != ".yml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // removed meanwhile
		}
		var spec kit.CdiSpec
		if err := yaml.Unmarshal(data, &spec); err != nil {
			return fmt.Errorf("CDI spec %s: %w", e.Name(), err)
		}
		for _, d := range spec.Devices {
			id := spec.Kind + "=" + d.Name
			defined[id] = append(defined[id], e.Name())
		}
	}
	var list []string
	found := 0
	for _, id := range ids {
		switch n := len(defined[id]); {
		case n > 1:
			list = append(list, fmt.Sprintf("CDI device %s of claim %s is defined %d times: %s", id, claim, n, strings.Join(defined[id], ", ")))
		case n == 1:
			found++
		}
	}
	if found == 0 && len(list) == 0 {
		list = append(list, fmt.Sprintf("none of the CDI devices %v of claim %s is defined in %s", ids, claim, dir))
	}
	return kit.Findings(list)
}

// unprepareOK calls the driver's NodeUnprepareResources for the claim
// through the interposer and checks that the call and the claim's answer
// succeeded.
func (w *world) unprepareOK(ctx context.Context, what string, ref interpose.ClaimRef) error {
	si, err := w.interposer(ctx)
	if err != nil {
		return err
	}
	rec, err := w.direct(ctx, func() (interpose.Record, error) { return si.client.Unprepare(ctx, ref) })
	if err != nil {
		return err
	}
	c, _ := rec.Claim(ref.UID)
	switch {
	case !rec.OK():
		return fmt.Errorf("NodeUnprepareResources of %s failed: %s %s", what, rec.Code, rec.Message)
	case !c.Answered:
		return fmt.Errorf("NodeUnprepareResources of %s: the driver's answer has no entry for the claim (every claim must have one)", what)
	case c.Error != "":
		return fmt.Errorf("NodeUnprepareResources of %s: claim error %q", what, c.Error)
	}
	return nil
}

func (w *world) unpreparedAgain(ctx context.Context, claim string) error {
	rec, _, err := w.ClaimRef(ctx, claim, "")
	if err != nil {
		return err
	}
	return w.unprepareOK(ctx, "claim "+claim+" (unprepared before)", interpose.ClaimRef{Namespace: w.Ns, Name: rec.Name, UID: string(rec.UID)})
}

func (w *world) unprepareNeverPrepared(ctx context.Context) error {
	return w.unprepareOK(ctx, "a claim never prepared", interpose.ClaimRef{Namespace: w.Ns, Name: "drakit-never-prepared", UID: string(uuid.NewUUID())})
}

// prepareWithMissing calls the driver's NodePrepareResources with the
// prepared claim and one that does not exist. Either answer keeps the
// contract: an error for the missing claim alone, the prepared claim with
// its CDI devices; or a gRPC error for the whole call, as the kubelet
// plugin library answers when it cannot get a claim (§17.2), after which
// the prepared claim must still be prepared as it was.
func (w *world) prepareWithMissing(ctx context.Context, claim string) (context.Context, error) {
	recs, ref, err := w.kubeletCalls(ctx, interpose.MethodPrepare, claim)
	if err != nil {
		return ctx, err
	}
	want, err := lastPrepared(recs, ref.UID)
	if err != nil {
		return ctx, err
	}
	si, _ := w.interposer(ctx)
	missing := interpose.ClaimRef{Namespace: w.Ns, Name: "drakit-no-such-claim", UID: string(uuid.NewUUID())}
	rec, err := w.direct(ctx, func() (interpose.Record, error) { return si.client.Prepare(ctx, ref, missing) })
	if err != nil {
		return ctx, err
	}
	var form string
	var list []string
	if rec.OK() {
		form = "per-claim: an error for the missing claim alone"
		good, _ := rec.Claim(ref.UID)
		bad, _ := rec.Claim(missing.UID)
		if !bad.Answered || bad.Error == "" {
			list = append(list, fmt.Sprintf("the driver answered a claim that does not exist without an error (answered %v, devices %v)", bad.Answered, bad.CDIDeviceIDs()))
		}
		if got, ok := prepared(rec, ref.UID); !ok || !slices.Equal(got, want) {
			list = append(list, fmt.Sprintf("beside a missing claim, the driver answered prepared claim %s with error %q and CDI devices %v, the kubelet was given %v", claim, good.Error, got, want))
		}
	} else {
		form = fmt.Sprintf("the whole call failed: %s %s", rec.Code, rec.Message)
		again, err := w.direct(ctx, func() (interpose.Record, error) { return si.client.Prepare(ctx, ref) })
		if err != nil {
			return ctx, err
		}
		if got, ok := prepared(again, ref.UID); !ok || !again.OK() || !slices.Equal(got, want) {
			list = append(list, fmt.Sprintf("after the failed call, claim %s is prepared with CDI devices %v (status %s), the kubelet was given %v", claim, got, again.Code, want))
		}
	}
	ctx = godog.Attach(ctx, godog.Attachment{FileName: "missing-claim-answer.txt", MediaType: "text/plain", Body: []byte(form)})
	return ctx, kit.Findings(list)
}

// kubeletUnprepared waits until the interposer recorded a successful
// NodeUnprepareResources of the kubelet for the claim.
func (w *world) kubeletUnprepared(ctx context.Context, claim string) error {
	var seen []interpose.Record
	return kit.Poll(ctx, w.Cfg.Timeouts.Cleanup, fmt.Sprintf("the kubelet's NodeUnprepareResources of claim %s to succeed at the driver", claim), func(ctx context.Context) (bool, string, error) {
		recs, ref, err := w.kubeletCalls(ctx, interpose.MethodUnprepare, claim)
		if err != nil {
			return false, err.Error(), nil
		}
		seen = recs
		for _, r := range recs {
			if c, _ := r.Claim(ref.UID); r.OK() && c.Answered && c.Error == "" {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d calls: %s", len(seen), describeCalls(seen)), nil
	})
}
