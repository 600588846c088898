package kit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/conformance/inventory"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
	"drakit.dev/drakit/conformance/report"
)

// Labels the kit puts on what it creates.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByKit   = "drakit-conformance"
	// namespacePrefix is the generateName of scenario namespaces.
	namespacePrefix = "drakit-"
)

// Suite is what all scenarios of one run share. It is built once by Run and
// only read afterwards.
type Suite struct {
	Cfg Config
	// Driver is the driver under test as the scenarios read it: Cfg's
	// declaration's settings.
	Driver  DriverSettings
	Kube    kubernetes.Interface
	apiHost string
	apiPort int
	// artifacts is the absolute artifacts directory.
	artifacts string
	// features holds the feature files (features.FS outside tests).
	features fs.FS
	// stepGroups are the run's step packages beside the kit's own steps.
	stepGroups []StepGroup
	// server describes the API server for the summary; kubernetesVersion
	// is its version for the report ("" when unknown).
	server            string
	kubernetesVersion string
	// logs reads a container log; nil means through the API server. Tests
	// replace it, because fake clientsets cannot serve logs.
	logs func(ctx context.Context, ns, pod string, opts *corev1.PodLogOptions) ([]byte, error)
	// impersonate makes a client acting as another identity (a driver's
	// ServiceAccount); nil when the kit cannot (tests with a fake).
	Impersonate func(rest.ImpersonationConfig) (kubernetes.Interface, error)
	// progress follows the scenarios; nil shows nothing.
	progress *progress
	// sliceLister reads the driver's ResourceSlices from the run's
	// informer; nil lists them from the API server (driverSlices).
	sliceLister resourcelisters.ResourceSliceLister
	// gates are the API server's enabled feature gates, read once
	// (allocatorFeatures); tests set them, a fake cannot serve /metrics.
	gatesOnce sync.Once
	gates     []string
	gatesErr  error

	// eligibility is what the cluster offers the scenarios' needs.
	eligibility eligibility

	// stepNeeds are the step patterns with needs, for scenarioDemand.
	needsOnce sync.Once
	stepNeeds []stepNeeds
	// pool leases the driver's devices to scenarios (devicePool).
	poolOnce sync.Once
	pool     *inventory.Pool
}

// podLogs reads a container's log.
func (s *Suite) podLogs(ctx context.Context, ns, pod string, opts *corev1.PodLogOptions) ([]byte, error) {
	if s.logs != nil {
		return s.logs(ctx, ns, pod, opts)
	}
	return s.Kube.CoreV1().Pods(ns).GetLogs(pod, opts).DoRaw(ctx)
}

// world is one scenario's state. initScenario creates one per scenario and
// binds the scenario's steps and hooks to it (never to a global), so that
// scenarios can run concurrently.
type World struct {
	*Suite
	Scenario *godog.Scenario
	Ns       string
	Ledger   *Ledger
	// pods are the pods the scenario created, by name; kept after deletion
	// so later steps can compare with what they saw.
	Pods map[string]*PodRecord
	// multiNode is the driver's device available on several nodes that
	// the multi-host steps use, once found.
	MultiNode *MultiNodeDevice
	// submitted is the outcome of the last "is submitted with" step.
	Submitted *Submission
	// held are the driver's devices the scenario holds by alias
	// ("the scenario holds device "a" of the driver").
	held map[string]inventory.Device
	// releases undo what the scenario holds on the node (the emulator's
	// NVML state lock); cleanup runs them first, whatever the outcome.
	Releases []func() error
	// heldLock is the emulator's NVML state lock while the scenario holds it.
	HeldLock *os.File
	// outcome is the worst status of the scenario's steps so far.
	outcome godog.StepResultStatus
	// notEligible is why the cluster cannot run the scenario, once
	// checkEligibility found it; notEligibleNoted once a step carries it.
	notEligible      string
	notEligibleNoted bool
	// lease holds the devices the scenario's steps need (acquireDevices),
	// from the Before hook until its cleanup is done; nil for a scenario
	// that needs none.
	Lease *inventory.Lease
}

// podRecord is what the kit learned about one of its pods.
type PodRecord struct {
	Name string
	UID  types.UID
	// report is the probe's report, read once the pod runs.
	Report *probe.Report
	// claims are the pod's claims, resolved once it runs, by the name of
	// the pod's claim entry (spec.resourceClaims[].name).
	Claims map[string]ClaimRecord
	// devices are the driver's devices allocated to the pod's claims, with
	// their ResourceSlice attributes, resolved once the pod runs.
	Devices []observe.Device
	// seen is what the container was found to see, once a "sees exactly"
	// step compared it.
	Seen *seenDevices
}

// claimRecord identifies a ResourceClaim object.
type ClaimRecord struct {
	Name string
	UID  types.UID
}

// submission is an object the scenario tried to create.
type Submission struct {
	Kind, Name string
	Err        error
}

func (s *Submission) Label() string { return s.Kind + " " + s.Name }

// newWorld is a new scenario's world in the run of s.
func newWorld(s *Suite) *World {
	return &World{Suite: s, Ledger: &Ledger{}, Pods: map[string]*PodRecord{}, held: map[string]inventory.Device{}}
}

// NewWorld is a scenario's world outside any run, for the unit tests of a
// step package: the kit configured by cfg, the client kube, the scenario's
// namespace ns and an empty cleanup ledger.
func NewWorld(cfg Config, kube kubernetes.Interface, ns string) *World {
	w := newWorld(&Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: kube})
	w.Ns = ns
	w.Scenario = &godog.Scenario{Name: "unit test"}
	return w
}

// initScenario registers the hooks and steps of one scenario. godog calls
// it once per scenario, so the world it creates is that scenario's alone:
// the steps are bound to it, and the Before hook fills in its namespace.
func (s *Suite) initScenario(sc *godog.ScenarioContext) {
	w := newWorld(s)
	sc.Before(w.checkEligibility)
	sc.Before(w.beforeScenario)
	sc.After(w.afterScenario)
	sc.StepContext().After(w.noteNotEligible)
	sc.StepContext().Before(func(ctx context.Context, st *godog.Step) (context.Context, error) {
		w.progress.step(w.Scenario, st.Text)
		return ctx, nil
	})
	sc.StepContext().After(func(ctx context.Context, _ *godog.Step, status godog.StepResultStatus, err error) (context.Context, error) {
		w.outcome = worse(w.outcome, status)
		if status == godog.StepFailed {
			ctx = markKitFailure(ctx, err)
		}
		return ctx, nil // an error here would be added to the step's own
	})
	for _, st := range w.steps() {
		sc.Step(st.Pattern, st.Fn)
	}
}

// beforeScenario creates the scenario's namespace and waits until pods can be
// created in it.
func (w *World) beforeScenario(ctx context.Context, sc *godog.Scenario) (context.Context, error) {
	logger := klog.FromContext(ctx).WithValues("scenario", sc.Name)
	w.Scenario = sc
	w.progress.start(sc)
	if w.notEligible != "" {
		return ctx, nil // checkEligibility skips it
	}
	if w.Driver.Hardware && HasTag(sc, EmulatorTag) {
		// Nothing to set up: its first step, which needs the emulator,
		// skips with hardwareSkipReason.
		return ctx, nil
	}
	ns, err := w.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: namespacePrefix,
			Labels:       map[string]string{LabelManagedBy: ManagedByKit},
			Annotations:  map[string]string{"drakit.dev/scenario": sc.Name},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return ctx, fmt.Errorf("create scenario namespace: %w", err)
	}
	w.Ns = ns.Name
	ctx = klog.NewContext(ctx, logger.WithValues("namespace", ns.Name))
	// The ServiceAccount admission plugin rejects pods until the
	// namespace's default ServiceAccount exists.
	err = Poll(ctx, w.Cfg.Timeouts.API, fmt.Sprintf("ServiceAccount %s/default to be created by the controller-manager", ns.Name), func(ctx context.Context) (bool, string, error) {
		_, err := w.Kube.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not found", nil
		}
		if err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
	if err != nil {
		return ctx, err
	}
	return ctx, w.acquireDevices(ctx, sc)
}

// afterScenario writes diagnostics when the scenario failed and then deletes
// everything the scenario created, whatever its outcome.
func (w *World) afterScenario(ctx context.Context, sc *godog.Scenario, scenarioErr error) (ctx2 context.Context, err error) {
	defer func() { w.progress.finish(sc, scenarioStatus(w.outcome, err)) }()
	if w.Ns == "" {
		return ctx, nil // Before failed before creating anything
	}
	// The devices are free for other scenarios once the cleanup released
	// them (or failed to: then they are not to be trusted either way).
	defer w.releaseDevices()
	// Cleanup must run even when the run is being cancelled.
	cctx := context.WithoutCancel(ctx)
	// Undefined and pending steps are the kit's own gaps, not cluster
	// behaviour: no diagnostics for them.
	failed := scenarioErr != nil && !errors.Is(scenarioErr, godog.ErrSkip) &&
		!errors.Is(scenarioErr, godog.ErrUndefined) && !errors.Is(scenarioErr, godog.ErrPending)
	diagnosed := false
	if failed {
		ctx = w.attachDiagnostics(cctx, ctx, scenarioErr)
		diagnosed = true
	}
	cleanupErr := w.cleanup(cctx)
	if cleanupErr != nil && !diagnosed {
		ctx = w.attachDiagnostics(cctx, ctx, cleanupErr)
	}
	if err := w.Kube.CoreV1().Namespaces().Delete(cctx, w.Ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		cleanupErr = errors.Join(cleanupErr, fmt.Errorf("delete namespace %s: %w", w.Ns, err))
	}
	if cleanupErr != nil {
		cleanupErr = fmt.Errorf("clean up scenario %q: %w", sc.Name, cleanupErr)
		if !failed {
			// The cleanup's failure is the scenario's first (a reset
			// command that failed is the kit's).
			ctx = markKitFailure(ctx, cleanupErr)
		}
		return ctx, cleanupErr
	}
	return ctx, nil
}

// statusRank orders step statuses as the reports count a scenario: a
// failed or ambiguous step fails it, else an undefined, pending or skipped
// one decides, in that order.
var statusRank = map[godog.StepResultStatus]int{
	godog.StepPassed: 0, godog.StepSkipped: 1, godog.StepPending: 2, godog.StepUndefined: 3, godog.StepAmbiguous: 4, godog.StepFailed: 4,
}

// worse is the status of a scenario with steps of both statuses.
func worse(a, b godog.StepResultStatus) godog.StepResultStatus {
	if statusRank[b] > statusRank[a] {
		return b
	}
	return a
}

// hardwareSkipReason is why an @emulator scenario does not run against a
// driver of real devices; the steps that need the emulator say it.
const HardwareSkipReason = "the driver manages real devices (--hardware, or hardware: real in its declaration): " +
	"the scenario needs drakit's hardware emulator on the node"

// hasTag says whether the scenario carries the tag.
func HasTag(sc *godog.Scenario, tag string) bool {
	for _, t := range sc.Tags {
		if t.Name == tag {
			return true
		}
	}
	return false
}

// scenarioStatus is a finished scenario's status as the reports count it:
// its worst step, failed when its cleanup failed.
func scenarioStatus(outcome godog.StepResultStatus, cleanupErr error) string {
	switch {
	case cleanupErr != nil, outcome == godog.StepAmbiguous:
		return "failed"
	}
	return outcome.String()
}

// skip ends the scenario as skipped, recording why: the reason is attached
// to the step and shows up in the summary.
func Skip(ctx context.Context, reason string) (context.Context, error) {
	ctx = godog.Attach(ctx, godog.Attachment{FileName: skipReasonAttachment, MediaType: "text/plain", Body: []byte(reason)})
	return ctx, fmt.Errorf("%w: %s", godog.ErrSkip, reason)
}

// findings turns a list of findings into one error, nil for none.
func Findings(list []string) error {
	switch len(list) {
	case 0:
		return nil
	case 1:
		return errors.New(list[0])
	}
	return fmt.Errorf("%d findings:\n- %s", len(list), strings.Join(list, "\n- "))
}

// pod returns the record of a pod the scenario created.
func (w *World) Pod(name string) (*PodRecord, error) {
	p, ok := w.Pods[name]
	if !ok {
		return nil, fmt.Errorf("pod %s: the scenario did not create it (a step must create it first)", name)
	}
	return p, nil
}

// runningPod returns the record of a pod whose report and claims the kit has
// read, which the "is running" step does.
func (w *World) RunningPod(name string) (*PodRecord, error) {
	p, err := w.Pod(name)
	if err != nil {
		return nil, err
	}
	if p.Report == nil {
		return nil, fmt.Errorf("pod %s: the kit has not seen it run yet (a step \"pod %q is running\" must come first)", name, name)
	}
	return p, nil
}

// warn attaches a warning to the scenario: advice that no KEP or API
// requires, which the summary and the report list and the verdict never
// counts.
func Warn(ctx context.Context, msg string) context.Context {
	klog.FromContext(ctx).Info("Warning, not counted in the verdict", "warning", msg)
	return godog.Attach(ctx, godog.Attachment{FileName: report.WarningAttachment, MediaType: "text/plain", Body: []byte(msg)})
}

// AttachText attaches a note to the scenario's report.
func AttachText(ctx context.Context, name, text string) context.Context {
	return godog.Attach(ctx, godog.Attachment{FileName: name, MediaType: "text/plain", Body: []byte(text)})
}

// TheMultiNodeDevice is the device available on several nodes the
// scenario picked.
func (w *World) TheMultiNodeDevice() (*MultiNodeDevice, error) {
	if w.MultiNode == nil {
		return nil, fmt.Errorf("no multi-node device picked (a step \"the driver publishes a device available on at least N nodes\" must come first)")
	}
	return w.MultiNode, nil
}
