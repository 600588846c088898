package contract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/kubeletapi"
)

// contractSteps check the driver's side of the kubelet's contract (DRA spec
// §17.2) as the kubelet relies on it: a claim is unprepared once no pod
// uses it, which frees its device for the next claim and removes its CDI
// devices from the node whatever the driver names them; prepare and
// unprepare are idempotent; a driver restarted between them loses nothing.
// Without node access they judge from the API server and the containers;
// the node-side steps read the kubelet's checkpoint, the node's CDI specs
// and the driver's DRA socket.
func (w *world) contractSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^pod "([^"]+)" is deleted, which the kubelet completes once the driver unprepared its claims$`, Fn: w.podDeletedUnprepared},
		{Pattern: `^the claim "([^"]+)" is deleted$`, Fn: w.deleteClaim},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the device pod "([^"]+)" had, by its identity attribute$`, Fn: w.claimForDeviceOf},
		{Pattern: `^the kit can read the node's CDI specs and the kubelet's DRA checkpoint$`, Fn: w.nodeContractReadable},
		{Pattern: `^the node's CDI specs define the CDI devices the kubelet got for the claim "([^"]+)"$`, Fn: w.claimCDIDevicesDefined},
		{Pattern: `^the node's CDI specs no longer define the CDI devices the claim "([^"]+)" got$`, Fn: w.claimCDIDevicesGone},
		{Pattern: `^the kit can call the driver's DRA socket on the node$`, Fn: w.driverSocketReachable},
		{Pattern: `^a repeated NodePrepareResources of the claim "([^"]+)" on the driver's socket returns the CDI devices the kubelet got$`, Fn: w.prepareRepeated},
		{Pattern: `^NodeUnprepareResources of the claim "([^"]+)" on the driver's socket succeeds twice more$`, Fn: w.unprepareRepeated},
	}
}

// contractKey holds the scenario's contractState in its context.
type contractKey struct{}

// contractState is what the node-side contract steps noted.
type contractState struct {
	// baseline are the CDI devices the node defined before the scenario
	// prepared anything: a driver may keep devices of its own (a spec per
	// device written at start) that claims refer to.
	baseline map[string]bool
	// claims are the claims whose CDI devices the kit noted, by name.
	claims map[string]notedClaim
}

// notedClaim is a claim as the kubelet recorded its preparation.
type notedClaim struct {
	UID types.UID
	// cdiIDs are the CDI device IDs the driver returned for it, sorted.
	cdiIDs []string
}

func (w *world) contractState(ctx context.Context) (*contractState, error) {
	st, ok := ctx.Value(contractKey{}).(*contractState)
	if !ok {
		return nil, errors.New("the kit has not read the node (a step \"the kit can read the node's CDI specs and the kubelet's DRA checkpoint\" must come first)")
	}
	return st, nil
}

// podDeletedUnprepared deletes the pod and waits until it is gone. The
// kubelet finishes a pod only after the driver's NodeUnprepareResources of
// the claims no other pod uses succeeded, and retries a failed unprepare
// meanwhile: a pod that stays is, as far as the API server shows, a driver
// that does not unprepare.
func (w *world) podDeletedUnprepared(ctx context.Context, name string) error {
	if err := w.DeletePod(ctx, name); err != nil {
		return fmt.Errorf("%w (the kubelet removes a deleted pod once the driver's NodeUnprepareResources of its claims succeeded: does the driver's unprepare fail?)", err)
	}
	return nil
}

// deleteClaim deletes a ResourceClaim of the scenario and waits until it is
// gone.
func (w *world) deleteClaim(ctx context.Context, name string) error {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", name, err)
	}
	if err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete claim %s: %w", name, err)
	}
	return kit.Poll(ctx, w.Cfg.Timeouts.Cleanup, fmt.Sprintf("claim %s to be gone after deletion", name), func(ctx context.Context) (bool, string, error) {
		got, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, "", nil
		case err != nil:
			return false, err.Error(), nil
		case got.UID != c.UID:
			return true, "", nil
		}
		return false, fmt.Sprintf("still there (allocated %t, reserved for %d, finalizers %v)", got.Status.Allocation != nil, len(got.Status.ReservedFor), got.Finalizers), nil
	})
}

// claimForDeviceOf creates a claim whose CEL selector admits only the
// device of the driver allocated to the pod's claims, by its identity
// attribute: it can be allocated only once that device is free, and the
// pod that uses it runs only once the driver prepares it again.
func (w *world) claimForDeviceOf(ctx context.Context, claim, pod string) error {
	p, err := w.PodWithDevices(pod)
	if err != nil {
		return err
	}
	if len(p.Devices) != 1 {
		var ids []string
		for _, d := range p.Devices {
			ids = append(ids, d.ID())
		}
		return fmt.Errorf("pod %s had %d devices of driver %s %s, want exactly one to ask for again", pod, len(p.Devices), w.Driver.DriverName, kit.List(ids))
	}
	d := p.Devices[0]
	if d.UUID == "" {
		return fmt.Errorf("device %s of pod %s has no string attribute %q (the kit's identity attribute) to select it by", d.ID(), pod, w.Driver.UUIDAttribute)
	}
	sel := kit.UuidSelector(w.Driver.DriverName, w.Driver.UUIDAttribute, d.UUID)
	return w.CreateClaim(ctx, kit.NewClaim(claim, kit.ClaimSpec(w.Driver.DeviceClass(), 1, sel)))
}

// nodeContractReadable checks that the kit can read the node's CDI specs and
// the kubelet's checkpoint, and notes the CDI devices the node defines now.
func (w *world) nodeContractReadable(ctx context.Context) (context.Context, error) {
	if reason := w.ContractAccess(); reason != "" {
		return kit.Skip(ctx, reason)
	}
	if _, err := kit.ReadKubeletDRAState(w.Cfg.NodeKubeletRootDir); err != nil {
		return ctx, err
	}
	defined, err := kit.CdiDefinitions(w.Cfg.NodeCDIDir)
	if err != nil {
		return ctx, err
	}
	st := &contractState{baseline: map[string]bool{}, claims: map[string]notedClaim{}}
	for id := range defined {
		st.baseline[id] = true
	}
	return context.WithValue(ctx, contractKey{}, st), nil
}

// preparedCDIDevices are the CDI device IDs of the driver's devices that the
// kubelet recorded for the claim, sorted; ok is false when it records no
// preparation of the claim.
func preparedCDIDevices(state map[string]kit.PreparedClaim, uid types.UID, driver string) (ids []string, ok bool) {
	c, ok := state[string(uid)]
	if !ok {
		return nil, false
	}
	for _, d := range c.DriverState[driver].Devices {
		ids = append(ids, d.CDIDeviceIDs...)
	}
	sort.Strings(ids)
	return ids, true
}

// claimCDIDevicesDefined reads, from the kubelet's checkpoint, the CDI
// devices the driver returned for the claim and checks that the node's CDI
// specs define each of them, and notes them. Once noted, they must stay what
// the kubelet recorded (a driver restart changes nothing of it).
func (w *world) claimCDIDevicesDefined(ctx context.Context, claim string) error {
	st, err := w.contractState(ctx)
	if err != nil {
		return err
	}
	ref, _, err := w.ClaimRef(ctx, claim, "")
	if err != nil {
		return err
	}
	state, err := kit.ReadKubeletDRAState(w.Cfg.NodeKubeletRootDir)
	if err != nil {
		return err
	}
	ids, ok := preparedCDIDevices(state, ref.UID, w.Driver.DriverName)
	switch {
	case !ok:
		return fmt.Errorf("claim %s (uid %s): the kubelet records no preparation of it", claim, ref.UID)
	case len(ids) == 0:
		return fmt.Errorf("claim %s (uid %s): the driver returned no CDI device for it, as the kubelet recorded", claim, ref.UID)
	}
	if noted, ok := st.claims[claim]; ok && !slices.Equal(noted.cdiIDs, ids) {
		return fmt.Errorf("claim %s: the kubelet recorded CDI devices %v, and %v before", claim, ids, noted.cdiIDs)
	}
	st.claims[claim] = notedClaim{UID: ref.UID, cdiIDs: ids}
	defined, err := kit.CdiDefinitions(w.Cfg.NodeCDIDir)
	if err != nil {
		return err
	}
	var missing []string
	for _, id := range ids {
		if len(defined[id]) == 0 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("claim %s: no CDI spec in %s defines the CDI devices %s that the kubelet got for it (a container started now could not get them)", claim, w.Cfg.NodeCDIDir, strings.Join(missing, ", "))
	}
	return nil
}

// claimCDIDevicesGone waits until the kubelet no longer records the claim
// prepared and the node's CDI specs define none of the CDI devices it got,
// by their IDs, whatever the files are named. A device the node defined
// before the scenario prepared anything, or that a claim the kubelet
// still records prepared got too, is not the claim's to remove; so a leak
// under a name an earlier scenario already leaked looks like a spec the
// driver keeps, and only the first scenario on the device finds it.
func (w *world) claimCDIDevicesGone(ctx context.Context, claim string) error {
	st, err := w.contractState(ctx)
	if err != nil {
		return err
	}
	noted, ok := st.claims[claim]
	if !ok {
		return fmt.Errorf("claim %s: the kit has not noted its CDI devices (a step \"the node's CDI specs define the CDI devices the kubelet got for the claim %q\" must come first)", claim, claim)
	}
	return kit.Poll(ctx, w.Cfg.Timeouts.Cleanup, fmt.Sprintf("the driver to remove the CDI devices of claim %s (uid %s) from %s", claim, noted.UID, w.Cfg.NodeCDIDir), func(ctx context.Context) (bool, string, error) {
		state, err := kit.ReadKubeletDRAState(w.Cfg.NodeKubeletRootDir)
		if err != nil {
			return false, err.Error(), nil
		}
		if _, ok := state[string(noted.UID)]; ok {
			return false, "the kubelet still records the claim prepared: the driver's NodeUnprepareResources has not succeeded", nil
		}
		defined, err := kit.CdiDefinitions(w.Cfg.NodeCDIDir)
		if err != nil {
			return false, err.Error(), nil
		}
		left := leftoverCDIDevices(noted.cdiIDs, defined, st.baseline, state)
		return len(left) == 0, "still defined: " + strings.Join(left, "; "), nil
	})
}

// leftoverCDIDevices are the claim's CDI devices (ids) that the specs still
// define, with their files, except those defined before (baseline) and
// those another prepared claim got.
func leftoverCDIDevices(ids []string, defined map[string][]string, baseline map[string]bool, state map[string]kit.PreparedClaim) []string {
	inUse := map[string]bool{}
	for _, c := range state {
		for _, ds := range c.DriverState {
			for _, d := range ds.Devices {
				for _, id := range d.CDIDeviceIDs {
					inUse[id] = true
				}
			}
		}
	}
	var left []string
	for _, id := range ids {
		if files := defined[id]; len(files) > 0 && !baseline[id] && !inUse[id] {
			left = append(left, fmt.Sprintf("%s in %s", id, strings.Join(files, ", ")))
		}
	}
	return left
}

// driverSocketReachable checks that the kit sees the kubelet's plugin
// registry and its checkpoint, and that a registration of the driver there
// names an endpoint that serves DRAPlugin.
func (w *world) driverSocketReachable(ctx context.Context) (context.Context, error) {
	if ctx, err := w.PluginRegistryReachable(ctx); err != nil {
		return ctx, err
	}
	_, err := w.driverEndpoint(ctx)
	return ctx, err
}

// driverEndpoint is, as the kit sees it, the DRAPlugin endpoint of a
// registration of the driver that serves it now; a restarted driver may
// register another one.
func (w *world) driverEndpoint(ctx context.Context) (string, error) {
	mine, err := w.SomeDriverRegistrations(ctx)
	if err != nil {
		return "", err
	}
	var bad []string
	for _, r := range mine {
		endpoint := w.Cfg.HostPath(r.Info.Endpoint)
		err := kubeletapi.ServesDRAPlugin(ctx, endpoint, kit.NodeSocketTimeout)
		if err == nil {
			return endpoint, nil
		}
		bad = append(bad, err.Error())
	}
	return "", fmt.Errorf("no endpoint that driver %s registered serves DRAPlugin: %s", w.Driver.DriverName, strings.Join(bad, "; "))
}

// socketClaim is the claim as the kubelet names it in DRAPlugin calls.
func (w *world) socketClaim(ctx context.Context, claim string) (*drapb.Claim, error) {
	ref, _, err := w.ClaimRef(ctx, claim, "")
	if err != nil {
		return nil, err
	}
	return &drapb.Claim{Namespace: w.Ns, Name: ref.Name, Uid: string(ref.UID)}, nil
}

// prepareRepeated calls the driver's NodePrepareResources for a claim the
// kubelet prepared: the answer must be the CDI devices the kubelet
// recorded, without an error.
func (w *world) prepareRepeated(ctx context.Context, claim string) error {
	c, err := w.socketClaim(ctx, claim)
	if err != nil {
		return err
	}
	state, err := kit.ReadKubeletDRAState(w.Cfg.NodeKubeletRootDir)
	if err != nil {
		return err
	}
	want, ok := preparedCDIDevices(state, types.UID(c.Uid), w.Driver.DriverName)
	if !ok {
		return fmt.Errorf("claim %s (uid %s): the kubelet records no preparation of it", claim, c.Uid)
	}
	endpoint, err := w.driverEndpoint(ctx)
	if err != nil {
		return err
	}
	answers, err := kubeletapi.Prepare(ctx, endpoint, kit.NodeSocketTimeout, c)
	if err != nil {
		return fmt.Errorf("a repeated NodePrepareResources of prepared claim %s: %w", claim, err)
	}
	return repeatedPrepareFindings(claim, answers[c.Uid], want)
}

// repeatedPrepareFindings judges the driver's answer (nil: none) to a
// repeated prepare of a claim for which the kubelet got want.
func repeatedPrepareFindings(claim string, answer *drapb.NodePrepareResourceResponse, want []string) error {
	switch {
	case answer == nil:
		return fmt.Errorf("a repeated NodePrepareResources of prepared claim %s: the driver's answer has no entry for the claim (every claim must have one)", claim)
	case answer.GetError() != "":
		return fmt.Errorf("a repeated NodePrepareResources of prepared claim %s failed: %s (prepare must be idempotent: the kubelet repeats a prepare it did not see succeed)", claim, answer.GetError())
	}
	var got []string
	for _, d := range answer.GetDevices() {
		got = append(got, d.GetCdiDeviceIds()...)
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("a repeated NodePrepareResources of prepared claim %s returned CDI devices %v, the kubelet got %v", claim, got, want)
	}
	return nil
}

// unprepareRepeated checks that the kubelet no longer records the claim
// prepared (it unprepared it) and calls the driver's
// NodeUnprepareResources for it twice more: both must succeed.
func (w *world) unprepareRepeated(ctx context.Context, claim string) error {
	c, err := w.socketClaim(ctx, claim)
	if err != nil {
		return err
	}
	state, err := kit.ReadKubeletDRAState(w.Cfg.NodeKubeletRootDir)
	if err != nil {
		return err
	}
	if _, ok := state[c.Uid]; ok {
		return fmt.Errorf("claim %s (uid %s): the kubelet still records it prepared: its NodeUnprepareResources has not succeeded", claim, c.Uid)
	}
	endpoint, err := w.driverEndpoint(ctx)
	if err != nil {
		return err
	}
	for i := 1; i <= 2; i++ {
		answers, err := kubeletapi.Unprepare(ctx, endpoint, kit.NodeSocketTimeout, c)
		if err != nil {
			return fmt.Errorf("NodeUnprepareResources of unprepared claim %s (repeat %d): %w", claim, i, err)
		}
		a, ok := answers[c.Uid]
		switch {
		case !ok:
			return fmt.Errorf("NodeUnprepareResources of unprepared claim %s (repeat %d): the driver's answer has no entry for the claim (every claim must have one)", claim, i)
		case a.GetError() != "":
			return fmt.Errorf("NodeUnprepareResources of unprepared claim %s (repeat %d) failed: %s (unprepare must be idempotent: the kubelet may unprepare a claim that is not prepared)", claim, i, a.GetError())
		}
	}
	return nil
}
