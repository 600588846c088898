package faults

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
)

// taintRuleSteps create DeviceTaintRules (KEP-5055), the administrator's
// API that adds a taint to the devices a rule selects by driver, pool and
// device, and read what the API server and the device-taint-eviction
// controller made of them (the rule's status).
func (w *world) taintRuleSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^a DeviceTaintRule "([^"]+)" taints device "([^"]+)" with "([^"]+)" and effect (\w+)$`, Fn: w.ruleForDevice},
		{Pattern: `^a DeviceTaintRule "([^"]+)" selecting the pool and name of device "([^"]+)" but driver "([^"]+)" taints with "([^"]+)" and effect (\w+)$`, Fn: w.ruleOtherDriver, Needs: kit.NeedsExclusive},
		{Pattern: `^a DeviceTaintRule "([^"]+)" with an empty device selector taints with "([^"]+)" and effect None$`, Fn: w.ruleEmptySelector},
		{Pattern: `^a DeviceTaintRule "([^"]+)" without a device selector taints with "([^"]+)" and effect None$`, Fn: w.ruleNoSelector},
		{Pattern: `^the DeviceTaintRule "([^"]+)" reports (True|False) with reason (\w+)(?: and "([^"]+)")?$`, Fn: w.ruleReports},
		{Pattern: `^the DeviceTaintRule "([^"]+)" reports every published device selected$`, Fn: w.ruleSelectsEveryDevice},
		{Pattern: `^the API server set the timeAdded of the DeviceTaintRule "([^"]+)"$`, Fn: w.ruleHasTimeAdded},
		{Pattern: `^a DeviceTaintRule "([^"]+)" is submitted with (.+)$`, Fn: w.submitRule},
		{Pattern: `^a ResourceSlice "([^"]+)" of the test driver with a device of (\d+) taints is submitted$`, Fn: w.submitSliceWithTaints},
	}
}

// parseTaint reads "key=value" or "key" and an effect into a taint.
func parseTaint(text, effect string) resourceapi.DeviceTaint {
	key, value, _ := strings.Cut(text, "=")
	return resourceapi.DeviceTaint{Key: key, Value: value, Effect: resourceapi.DeviceTaintEffect(effect)}
}

// createRule creates a DeviceTaintRule of the scenario. Its name carries the
// scenario's namespace; the ledger deletes it whatever the outcome, before
// the scenario's devices go back to the pool.
func (w *world) createRule(ctx context.Context, alias string, sel *resourceapi.DeviceTaintSelector, taint resourceapi.DeviceTaint) error {
	if _, dup := w.taint.rules[alias]; dup {
		return fmt.Errorf("DeviceTaintRule %q: the scenario created it already", alias)
	}
	pods, err := w.Kube.CoreV1().Pods(w.Ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the scenario's pods: %w", err)
	}
	rule := &resourceapi.DeviceTaintRule{ObjectMeta: kit.KitMeta(w.TestObjectName(alias)),
		Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: sel, Taint: taint}}
	if _, err := w.Kube.ResourceV1().DeviceTaintRules().Create(ctx, rule, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create DeviceTaintRule %s: %w", rule.Name, err)
	}
	w.Ledger.Add(kit.KindDeviceTaintRule, rule.Name)
	w.taint.rules[alias] = rule.Name
	w.taint.podsRV = pods.ResourceVersion
	return nil
}

func (w *world) ruleForDevice(ctx context.Context, alias, device, taint, effect string) error {
	d, err := w.HeldDevice(device)
	if err != nil {
		return err
	}
	sel := &resourceapi.DeviceTaintSelector{Driver: ptr.To(w.Driver.DriverName), Pool: ptr.To(d.Pool), Device: ptr.To(d.Name)}
	return w.createRule(ctx, alias, sel, parseTaint(taint, effect))
}

func (w *world) ruleOtherDriver(ctx context.Context, alias, device, driver, taint, effect string) error {
	d, err := w.HeldDevice(device)
	if err != nil {
		return err
	}
	if driver == w.Driver.DriverName {
		return fmt.Errorf("DeviceTaintRule %s: driver %q is the driver under test, the step needs another", alias, driver)
	}
	sel := &resourceapi.DeviceTaintSelector{Driver: ptr.To(driver), Pool: ptr.To(d.Pool), Device: ptr.To(d.Name)}
	return w.createRule(ctx, alias, sel, parseTaint(taint, effect))
}

// ruleEmptySelector and ruleNoSelector create rules that select every device
// and none: with effect None, so that they disturb no other scenario; the
// controller's count in the rule's status says what they selected.
func (w *world) ruleEmptySelector(ctx context.Context, alias, taint string) error {
	return w.createRule(ctx, alias, &resourceapi.DeviceTaintSelector{}, parseTaint(taint, string(resourceapi.DeviceTaintEffectNone)))
}

func (w *world) ruleNoSelector(ctx context.Context, alias, taint string) error {
	return w.createRule(ctx, alias, nil, parseTaint(taint, string(resourceapi.DeviceTaintEffectNone)))
}

func (w *world) rule(ctx context.Context, alias string) (*resourceapi.DeviceTaintRule, error) {
	name, ok := w.taint.rules[alias]
	if !ok {
		return nil, fmt.Errorf("DeviceTaintRule %q: the scenario did not create it", alias)
	}
	r, err := w.Kube.ResourceV1().DeviceTaintRules().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get DeviceTaintRule %s: %w", name, err)
	}
	return r, nil
}

// evictionCondition is the rule's EvictionInProgress condition for its
// current generation; nil when the controller has not reported on it.
func evictionCondition(r *resourceapi.DeviceTaintRule) *metav1.Condition {
	for i := range r.Status.Conditions {
		c := &r.Status.Conditions[i]
		if c.Type == resourceapi.DeviceTaintConditionEvictionInProgress && c.ObservedGeneration == r.Generation {
			return c
		}
	}
	return nil
}

func describeCondition(c *metav1.Condition) string {
	if c == nil {
		return "no EvictionInProgress condition for the rule's generation"
	}
	return fmt.Sprintf("EvictionInProgress=%s (reason %s, observedGeneration %d): %q", c.Status, c.Reason, c.ObservedGeneration, c.Message)
}

// ruleReports waits until the device-taint-eviction controller reports the
// condition on the rule's current generation. The controller updates a
// rule's status at most every 10 s, so a change can take that long.
func (w *world) ruleReports(ctx context.Context, alias, status, reason, message string) error {
	var last *metav1.Condition
	return kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("DeviceTaintRule %s to report EvictionInProgress=%s with reason %s", alias, status, reason), func(ctx context.Context) (bool, string, error) {
		r, err := w.rule(ctx, alias)
		if err != nil {
			return false, err.Error(), nil
		}
		last = evictionCondition(r)
		done := last != nil && string(last.Status) == status && last.Reason == reason && strings.Contains(last.Message, message)
		return done, describeCondition(last), nil
	})
}

// ruleSelectsEveryDevice checks the count of published devices that the
// device-taint-eviction controller reports for a rule of effect None
// against the devices of the newest generation of every pool, counted
// before and after (other scenarios may publish pools meanwhile).
func (w *world) ruleSelectsEveryDevice(ctx context.Context, alias string) error {
	before, err := w.publishedDeviceCount(ctx)
	if err != nil {
		return err
	}
	if err := w.ruleReports(ctx, alias, string(metav1.ConditionFalse), "NoEffect", ""); err != nil {
		return err
	}
	after, err := w.publishedDeviceCount(ctx)
	if err != nil {
		return err
	}
	r, err := w.rule(ctx, alias)
	if err != nil {
		return err
	}
	c := evictionCondition(r)
	n, ok := selectedCount(c.Message)
	if !ok {
		return fmt.Errorf("DeviceTaintRule %s: the condition's message does not say how many published devices it selects: %q", alias, c.Message)
	}
	if n < min(before, after) || n > max(before, after) {
		return fmt.Errorf("DeviceTaintRule %s selects %d published devices according to its status, expected every device: %d in the cluster's ResourceSlices", alias, n, before)
	}
	return nil
}

var selectedPattern = regexp.MustCompile(`(\d+) published devices? selected`)

// selectedCount reads "N published devices selected" from the message the
// controller writes for a rule of effect None.
func selectedCount(message string) (int, bool) {
	m := selectedPattern.FindStringSubmatch(message)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// publishedDeviceCount counts the devices in the newest generation of every
// pool of every driver, as the device-taint-eviction controller does.
func (w *world) publishedDeviceCount(ctx context.Context) (int, error) {
	list, err := w.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list ResourceSlices: %w", err)
	}
	return countPublishedDevices(list.Items), nil
}

func countPublishedDevices(slices []resourceapi.ResourceSlice) int {
	newest := map[[2]string]int64{}
	for _, s := range slices {
		k := [2]string{s.Spec.Driver, s.Spec.Pool.Name}
		newest[k] = max(newest[k], s.Spec.Pool.Generation)
	}
	n := 0
	for _, s := range slices {
		if s.Spec.Pool.Generation == newest[[2]string{s.Spec.Driver, s.Spec.Pool.Name}] {
			n += len(s.Spec.Devices)
		}
	}
	return n
}

func (w *world) ruleHasTimeAdded(ctx context.Context, alias string) error {
	r, err := w.rule(ctx, alias)
	if err != nil {
		return err
	}
	t := r.Spec.Taint.TimeAdded
	switch {
	case t == nil:
		return fmt.Errorf("DeviceTaintRule %s: the API server stored its taint without timeAdded", r.Name)
	case t.Time.Before(r.CreationTimestamp.Time) || t.Time.After(r.CreationTimestamp.Add(secondSlack)):
		return fmt.Errorf("DeviceTaintRule %s: timeAdded %s is not the time of its creation (%s)", r.Name, t.UTC().Format(timeFormat), r.CreationTimestamp.UTC().Format(timeFormat))
	}
	return nil
}

// ruleDefects are the DeviceTaintRules the validation scenarios submit, by
// the words that name them in the features. Each selects a device of a
// driver that does not exist, so a rule accepted by mistake taints nothing.
var ruleDefects = map[string]func(*resourceapi.DeviceTaintRuleSpec){
	"effect PreferNoSchedule": func(s *resourceapi.DeviceTaintRuleSpec) { s.Taint.Effect = "PreferNoSchedule" },
	"no effect":               func(s *resourceapi.DeviceTaintRuleSpec) { s.Taint.Effect = "" },
	"no key":                  func(s *resourceapi.DeviceTaintRuleSpec) { s.Taint.Key = "" },
	"a key that is not a label name": func(s *resourceapi.DeviceTaintRuleSpec) {
		s.Taint.Key = "drakit.dev/not a label name"
	},
	"a value that is not a label value": func(s *resourceapi.DeviceTaintRuleSpec) { s.Taint.Value = "not a label value" },
	"no defect":                         func(*resourceapi.DeviceTaintRuleSpec) {},
}

// validationDriver is the driver the validation rules select: no driver
// publishes it.
const validationDriver = "validation.conformance.drakit.dev"

func (w *world) submitRule(ctx context.Context, alias, defect string) error {
	mutate, ok := ruleDefects[defect]
	if !ok {
		return fmt.Errorf("unknown DeviceTaintRule defect %q; the kit knows %s", defect, knownKeys(ruleDefects))
	}
	spec := resourceapi.DeviceTaintRuleSpec{
		DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(validationDriver)},
		Taint:          resourceapi.DeviceTaint{Key: "drakit.dev/validation", Value: "yes", Effect: resourceapi.DeviceTaintEffectNoSchedule},
	}
	mutate(&spec)
	name := w.TestObjectName(alias)
	_, err := w.Kube.ResourceV1().DeviceTaintRules().Create(ctx, &resourceapi.DeviceTaintRule{ObjectMeta: kit.KitMeta(name), Spec: spec}, metav1.CreateOptions{})
	if err == nil {
		w.Ledger.Add(kit.KindDeviceTaintRule, name)
		w.taint.rules[alias] = name
	}
	w.Submitted = &kit.Submission{Kind: kit.KindDeviceTaintRule, Name: name, Err: err}
	return nil
}

// submitSliceWithTaints submits a slice of the test driver (no node's,
// available nowhere a claim of the driver under test looks) whose one device
// has n NoSchedule taints.
func (w *world) submitSliceWithTaints(ctx context.Context, name string, n int) error {
	s := w.TestSlice(name, name, 1)
	d := resourceapi.Device{Name: "tainted"}
	for i := range n {
		d.Taints = append(d.Taints, resourceapi.DeviceTaint{Key: fmt.Sprintf("drakit.dev/taint-%d", i), Effect: resourceapi.DeviceTaintEffectNoSchedule})
	}
	s.Spec.Devices = []resourceapi.Device{d}
	w.SubmitSlice(ctx, s)
	return nil
}
