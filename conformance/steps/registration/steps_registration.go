package registration

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/kubeletapi"
	"drakit.dev/drakit/conformance/lint"
)

// registrationSteps check the driver's kubelet plugin registration (DRA
// spec §17.1) through the kubelet's plugin registry on the node, and what
// the kubelet does with the driver's ResourceSlices when the driver goes
// away and comes back.
func (w *world) registrationSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the kit can reach the kubelet's plugin registry$`, Fn: w.PluginRegistryReachable},
		{Pattern: `^the driver's registration socket answers GetInfo as a DRAPlugin named after the driver$`, Fn: w.driverRegistered},
		{Pattern: `^the endpoint the driver registered is a unix socket that serves DRAPlugin$`, Fn: w.registeredEndpointServes},
		{Pattern: `^the versions the driver registered are gRPC service names, "([^"]+)" among them$`, Fn: w.registeredServices},
		{Pattern: `^the driver registers again in the kubelet's plugin registry$`, Fn: w.driverRegistersAgain},
		{Pattern: `^pod "([^"]+)" still runs, its containers never restarted$`, Fn: w.podStillRuns},
		{Pattern: `^the kubelet deletes the driver's ResourceSlices for the node 30 seconds after the driver went away$`, Fn: w.kubeletWipesSlices},
		{Pattern: `^the driver's devices on the node outlive the kubelet's 30 second grace$`, Fn: w.slicesKeptThroughRestart},
	}
}

// Kubelet constants (k8s.io/kubernetes pkg/kubelet/cm/dra): the kubelet
// deletes a driver's ResourceSlices for its node wipeGrace after the
// driver's last plugin stopped being usable (disconnected or unregistered),
// unless a plugin of the driver becomes usable again before.
const (
	wipeGrace = 30 * time.Second
	// wipeEarly is how much earlier than wipeGrace after the driver was
	// asked to stop the kit still accepts a wipe (timer granularity).
	wipeEarly = time.Second
	// wipeLate is how much later than wipeGrace after the driver's pods
	// were gone the kit still accepts a wipe: the kubelet's DeleteCollection
	// and the informer's watch.
	wipeLate = 15 * time.Second
)

// driverStop is what the kit saw around "the driver stops on the node".
type driverStop struct {
	// requested is when the kit asked the driver's DaemonSet to leave the
	// nodes; gone when it saw the driver's pods gone; back when it saw a
	// driver pod ready again (zero until then).
	requested, gone, back time.Time
	// nodes are the nodes the driver's pods ran on.
	nodes []string
	// slices are the driver's ResourceSlices for those nodes before the
	// stop, by name with their UIDs; devices counts their devices per node.
	slices  map[string]string
	devices map[string]int
}

func (w *world) driverRegistered(ctx context.Context) (context.Context, error) {
	mine, desc, err := w.DriverRegistrations(ctx)
	if err != nil {
		return ctx, err
	}
	ctx = godog.Attach(ctx, godog.Attachment{FileName: "plugin-registry.txt", MediaType: "text/plain", Body: []byte(desc)})
	if len(mine) == 0 {
		return ctx, fmt.Errorf("no registration socket in the kubelet's plugin registry answers GetInfo with the name %s: %s", w.Driver.DriverName, desc)
	}
	var bad []string
	for _, r := range mine {
		if r.Info.Type != registerapi.DRAPlugin {
			bad = append(bad, fmt.Sprintf("registration socket %s of %s answers type %q, expected %q", r.Socket, w.Driver.DriverName, r.Info.Type, registerapi.DRAPlugin))
		}
	}
	return ctx, kit.Findings(bad)
}

func (w *world) registeredEndpointServes(ctx context.Context) error {
	mine, err := w.SomeDriverRegistrations(ctx)
	if err != nil {
		return err
	}
	var bad []string
	for _, r := range mine {
		if !filepath.IsAbs(r.Info.Endpoint) {
			bad = append(bad, fmt.Sprintf("registration socket %s registers endpoint %q, expected an absolute path on the node", r.Socket, r.Info.Endpoint))
			continue
		}
		if err := kubeletapi.ServesDRAPlugin(ctx, w.Cfg.HostPath(r.Info.Endpoint), kit.NodeSocketTimeout); err != nil {
			bad = append(bad, fmt.Sprintf("registration socket %s registers endpoint %s: %v", r.Socket, r.Info.Endpoint, err))
		}
	}
	return kit.Findings(bad)
}

func (w *world) registeredServices(ctx context.Context, want string) error {
	mine, err := w.SomeDriverRegistrations(ctx)
	if err != nil {
		return err
	}
	var bad []string
	for _, r := range mine {
		vs := r.Info.SupportedVersions
		if len(vs) == 0 {
			bad = append(bad, fmt.Sprintf("registration socket %s registers no supported versions: the kubelet rejects an empty list of gRPC services", r.Socket))
			continue
		}
		for _, v := range vs {
			if !kubeletapi.ServiceName(v) {
				bad = append(bad, fmt.Sprintf("registration socket %s registers the version %q: supported versions name gRPC services such as %q, not releases", r.Socket, v, drapb.DRAPluginService))
			}
		}
		if !slices.Contains(vs, want) {
			bad = append(bad, fmt.Sprintf("registration socket %s registers %q, without %s", r.Socket, vs, want))
		}
	}
	return kit.Findings(bad)
}

// driverRegistersAgain waits until a registration socket of the driver
// answers GetInfo and its endpoint serves DRAPlugin.
func (w *world) driverRegistersAgain(ctx context.Context) error {
	start := time.Now()
	return kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("driver %s to register in the kubelet's plugin registry", w.Driver.DriverName), func(ctx context.Context) (bool, string, error) {
		at, status := w.registeredNow(ctx)
		if !at.IsZero() {
			klog.FromContext(ctx).Info("The driver registered again", "after", at.Sub(start).Round(time.Millisecond))
		}
		return !at.IsZero(), status, nil
	})
}

// registeredNow says when (now) a registration of the driver answered with
// an endpoint that serves DRAPlugin; zero and what it saw when none did.
func (w *world) registeredNow(ctx context.Context) (time.Time, string) {
	mine, desc, err := w.DriverRegistrations(ctx)
	if err != nil {
		return time.Time{}, err.Error()
	}
	for _, r := range mine {
		if kubeletapi.ServesDRAPlugin(ctx, w.Cfg.HostPath(r.Info.Endpoint), kit.NodeSocketTimeout) == nil {
			return time.Now(), ""
		}
	}
	return time.Time{}, desc
}

// podStillRuns checks that a pod the scenario saw running still runs, as
// the same pod, with no container restarted.
func (w *world) podStillRuns(ctx context.Context, name string) error {
	p, err := w.Pod(name)
	if err != nil {
		return err
	}
	pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get pod %s: %w", name, err)
	}
	var bad []string
	if pod.UID != p.UID {
		bad = append(bad, fmt.Sprintf("pod %s was replaced (uid %s, was %s)", name, pod.UID, p.UID))
	}
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		bad = append(bad, fmt.Sprintf("pod %s no longer runs: %s", name, kit.DescribePod(pod)))
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.RestartCount != 0 || cs.State.Running == nil {
			bad = append(bad, fmt.Sprintf("pod %s: container %s restarted %d times, running %v", name, cs.Name, cs.RestartCount, cs.State.Running != nil))
		}
	}
	return kit.Findings(bad)
}

// nodeSlices are the driver's ResourceSlices for the nodes: UIDs by slice
// name, and device counts per node.
func (w *world) nodeSlices(ctx context.Context, nodes []string) (map[string]string, map[string]int, error) {
	list, err := w.DriverSlices(ctx)
	if err != nil {
		return nil, nil, err
	}
	uids, devices := map[string]string{}, map[string]int{}
	for _, s := range list {
		if s.Spec.NodeName == nil || !slices.Contains(nodes, *s.Spec.NodeName) {
			continue
		}
		uids[s.Name] = string(s.UID)
		devices[*s.Spec.NodeName] += len(s.Spec.Devices)
	}
	return uids, devices, nil
}

// stopped is the scenario's driver stop, or the error that says a stop
// must come first.
func (w *world) stopped() (*driverStop, error) {
	if w.stop == nil {
		return nil, fmt.Errorf("the driver was not stopped: a step \"the driver stops on the node\" must come first")
	}
	if len(w.stop.slices) == 0 {
		return nil, fmt.Errorf("driver %s had no ResourceSlices for nodes %s before it stopped: the kit cannot watch the kubelet delete them", w.Driver.DriverName, strings.Join(w.stop.nodes, ", "))
	}
	return w.stop, nil
}

// kubeletWipesSlices polls (every poll interval, from the informer's
// cache) until the driver's ResourceSlices for its nodes are gone, and
// checks when: not before wipeGrace after the kit asked the driver to stop
// (the driver cannot have disconnected earlier), not much after wipeGrace
// after its pods were gone (it had disconnected by then).
func (w *world) kubeletWipesSlices(ctx context.Context) (context.Context, error) {
	st, err := w.stopped()
	if err != nil {
		return ctx, err
	}
	var firstGone, allGone time.Time
	timeout := time.Until(st.gone.Add(wipeGrace + wipeLate))
	err = kit.Poll(ctx, timeout, fmt.Sprintf("the kubelet to delete the ResourceSlices of driver %s for nodes %s", w.Driver.DriverName, strings.Join(st.nodes, ", ")), func(ctx context.Context) (bool, string, error) {
		now, err := w.nodeSlicesNow(ctx, st.nodes)
		if err != nil {
			return false, err.Error(), nil
		}
		left := 0
		for name, uid := range st.slices {
			if now[name] == uid {
				left++
			}
		}
		t := time.Now()
		if left < len(st.slices) && firstGone.IsZero() {
			firstGone = t
		}
		if len(now) == 0 {
			allGone = t
			return true, "", nil
		}
		return false, fmt.Sprintf("%d of the %d slices there before the stop, %d slices in all, %s after the stop was asked", left, len(st.slices), len(now), t.Sub(st.requested).Round(time.Millisecond)), nil
	})
	if err != nil {
		return ctx, fmt.Errorf("%w (the driver's pods were gone %s after the stop was asked; the kubelet deletes the slices %s after the driver's last plugin disconnects)", err, st.gone.Sub(st.requested).Round(time.Millisecond), wipeGrace)
	}
	timing := fmt.Sprintf("stop asked at 0s; driver pods gone at %s; first slice gone at %s; all %d slices gone at %s (%s after the pods were gone)",
		st.gone.Sub(st.requested).Round(time.Millisecond), firstGone.Sub(st.requested).Round(time.Millisecond), len(st.slices),
		allGone.Sub(st.requested).Round(time.Millisecond), allGone.Sub(st.gone).Round(time.Millisecond))
	ctx = godog.Attach(ctx, godog.Attachment{FileName: "slice-wipe-timing.txt", MediaType: "text/plain", Body: []byte(timing)})
	klog.FromContext(ctx).Info("The kubelet deleted the driver's ResourceSlices", "timing", timing)
	if early := firstGone.Sub(st.requested); early < wipeGrace-wipeEarly {
		return ctx, fmt.Errorf("driver %s's ResourceSlices for nodes %s went %s after the kit asked the driver to stop, before the kubelet's %s grace: the driver or another actor deleted them (%s)",
			w.Driver.DriverName, strings.Join(st.nodes, ", "), early.Round(time.Millisecond), wipeGrace, timing)
	}
	return ctx, nil
}

// nodeSlicesNow are the driver's ResourceSlices for the nodes now.
func (w *world) nodeSlicesNow(ctx context.Context, nodes []string) (map[string]string, error) {
	uids, _, err := w.nodeSlices(ctx, nodes)
	return uids, err
}

// slicesKeptThroughRestart checks, after the driver runs again, that it
// registered within the kubelet's grace and that its ResourceSlices for
// its nodes hold as many devices as before the stop once the grace has
// passed for certain (wipeGrace + wipeLate after its pods were gone). A
// slice gone or replaced meanwhile (another UID) is only a warning: the
// kubelet keeps the slices (§17.1), but no KEP or API stops a driver from
// replacing its own.
func (w *world) slicesKeptThroughRestart(ctx context.Context) (context.Context, error) {
	st, err := w.stopped()
	if err != nil {
		return ctx, err
	}
	if st.back.IsZero() {
		return ctx, fmt.Errorf("the driver does not run again: a step \"the driver runs again on the node\" must come first")
	}
	var registered time.Time
	err = kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("driver %s to register in the kubelet's plugin registry", w.Driver.DriverName), func(ctx context.Context) (bool, string, error) {
		at, status := w.registeredNow(ctx)
		registered = at
		return !at.IsZero(), status, nil
	})
	if err != nil {
		return ctx, err
	}
	downtime := registered.Sub(st.requested)
	if downtime >= wipeGrace-wipeEarly {
		return kit.Skip(ctx, fmt.Sprintf("driver %s registered again %s after the kit asked it to stop: not within the kubelet's %s grace, so the kit cannot tell whether its slices had to be kept",
			w.Driver.DriverName, downtime.Round(time.Millisecond), wipeGrace))
	}
	until := st.gone.Add(wipeGrace + wipeLate)
	replaced := map[string]bool{}
	for time.Now().Before(until) {
		now, err := w.nodeSlicesNow(ctx, st.nodes)
		if err != nil {
			return ctx, err
		}
		t := time.Now().Sub(st.requested).Round(time.Millisecond)
		for _, name := range slices.Sorted(maps.Keys(st.slices)) {
			if now[name] != st.slices[name] && !replaced[name] {
				replaced[name] = true
				ctx = kit.Warn(ctx, fmt.Sprintf("ResourceSlice %s (uid %s) of driver %s was gone or replaced %s after the kit asked the driver to stop, though the driver registered again after %s, within the kubelet's %s grace (%s: the kubelet keeps the slices, and a driver may replace its own)",
					name, st.slices[name], w.Driver.DriverName, t, downtime.Round(time.Millisecond), wipeGrace, lint.NoBasis))
			}
		}
		select {
		case <-ctx.Done():
			return ctx, ctx.Err()
		case <-time.After(kit.PollInterval):
		}
	}
	_, devices, err := w.nodeSlices(ctx, st.nodes)
	if err != nil {
		return ctx, err
	}
	var lost []string
	for _, n := range st.nodes {
		if devices[n] < st.devices[n] {
			lost = append(lost, fmt.Sprintf("driver %s's ResourceSlices for node %s hold %d devices %s after the kit asked it to stop, %d before: it registered again after %s, within the kubelet's %s grace, and lost devices",
				w.Driver.DriverName, n, devices[n], time.Since(st.requested).Round(time.Millisecond), st.devices[n], downtime.Round(time.Millisecond), wipeGrace))
		}
	}
	timing := fmt.Sprintf("stop asked at 0s; driver pods gone at %s; a driver pod ready at %s; registered at %s; %d of %d slices kept until %s",
		st.gone.Sub(st.requested).Round(time.Millisecond), st.back.Sub(st.requested).Round(time.Millisecond), downtime.Round(time.Millisecond),
		len(st.slices)-len(replaced), len(st.slices), until.Sub(st.requested).Round(time.Millisecond))
	ctx = godog.Attach(ctx, godog.Attachment{FileName: "slice-keep-timing.txt", MediaType: "text/plain", Body: []byte(timing)})
	return ctx, kit.Findings(lost)
}
