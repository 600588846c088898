package kit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/conformance/probe"
)

// Attachment names the summary recognizes in cucumber.json.
const (
	skipReasonAttachment = "skip-reason"
	diagnosticsDir       = "diagnostics"
)

// Bounds of what diagnostics include.
const (
	maxEvents       = 100
	driverLogLines  = int64(200)
	diagnosticsMode = 0o644
)

// attachDiagnostics collects the scenario's diagnostics, writes them to
// ArtifactsDir/diagnostics/<scenario>.txt and attaches them to the report.
// Collection problems are written into the diagnostics themselves.
func (w *World) attachDiagnostics(cctx, ctx context.Context, cause error) context.Context {
	body := w.diagnostics(cctx, cause)
	rel := filepath.Join(diagnosticsDir, diagnosticsFileName(w.Scenario.Name, w.Scenario.Id))
	path := filepath.Join(w.artifacts, rel)
	if err := os.WriteFile(path, body, diagnosticsMode); err != nil {
		klog.FromContext(ctx).Error(err, "Writing diagnostics failed", "path", path)
	}
	return godog.Attach(ctx, godog.Attachment{FileName: filepath.ToSlash(rel), MediaType: "text/plain", Body: body})
}

var unsafeFileChars = regexp.MustCompile(`[^a-z0-9]+`)

// diagnosticsFileName is a file name for a scenario, unique per pickle id.
func diagnosticsFileName(name, id string) string {
	slug := strings.Trim(unsafeFileChars.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(slug) > 80 {
		slug = strings.TrimRight(slug[:80], "-")
	}
	if slug == "" {
		slug = "scenario"
	}
	return slug + "-" + unsafeFileChars.ReplaceAllString(strings.ToLower(id), "") + ".txt"
}

// diagnostics renders everything that helps to understand a failure: the
// namespace's claims, templates, pods, PodGroups and Workloads (when the
// scenario made any) and events, the probe reports, the
// driver's ResourceSlices and the tails of the driver pods' logs.
func (w *World) diagnostics(ctx context.Context, cause error) []byte {
	var b bytes.Buffer
	section := func(title string) { fmt.Fprintf(&b, "\n===== %s =====\n", title) }
	fmt.Fprintf(&b, "scenario: %s\nnamespace: %s\ndriver: %s\nerror:\n%v\n", w.Scenario.Name, w.Ns, w.Driver.DriverName, cause)

	section("ResourceClaims")
	if list, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "list: %v\n", err)
	} else {
		for i := range list.Items {
			writeYAML(&b, &list.Items[i])
		}
	}
	section("ResourceClaimTemplates")
	if list, err := w.Kube.ResourceV1().ResourceClaimTemplates(w.Ns).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "list: %v\n", err)
	} else {
		for i := range list.Items {
			writeYAML(&b, &list.Items[i])
		}
	}
	section("Pods")
	if list, err := w.Kube.CoreV1().Pods(w.Ns).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "list: %v\n", err)
	} else {
		for i := range list.Items {
			writeYAML(&b, &list.Items[i])
		}
	}
	if w.Ledger.Has(KindPodGroup) {
		section("PodGroups")
		if list, err := w.Kube.SchedulingV1beta1().PodGroups(w.Ns).List(ctx, metav1.ListOptions{}); err != nil {
			fmt.Fprintf(&b, "list: %v\n", err)
		} else {
			for i := range list.Items {
				writeYAML(&b, &list.Items[i])
			}
		}
	}
	if w.Ledger.Has(KindWorkload) {
		section("Workloads")
		if list, err := w.Kube.SchedulingV1beta1().Workloads(w.Ns).List(ctx, metav1.ListOptions{}); err != nil {
			fmt.Fprintf(&b, "list: %v\n", err)
		} else {
			for i := range list.Items {
				writeYAML(&b, &list.Items[i])
			}
		}
	}
	section("Probe reports")
	names := make([]string, 0, len(w.Pods))
	for n := range w.Pods {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := w.Pods[n]
		if p.Report == nil {
			fmt.Fprintf(&b, "pod %s: no report read\n", n)
			continue
		}
		line, err := probe.Format(*p.Report)
		if err != nil {
			line = err.Error()
		}
		fmt.Fprintf(&b, "pod %s: %s\n", n, line)
	}
	section("Events (oldest first)")
	if list, err := w.Kube.CoreV1().Events(w.Ns).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "list: %v\n", err)
	} else {
		writeEvents(&b, list.Items)
	}
	if rules := w.Ledger.Names(KindDeviceTaintRule); len(rules) > 0 {
		section("DeviceTaintRules of the scenario")
		for _, name := range rules {
			if r, err := w.Kube.ResourceV1().DeviceTaintRules().Get(ctx, name, metav1.GetOptions{}); err != nil {
				fmt.Fprintf(&b, "get %s: %v\n", name, err)
			} else {
				writeYAML(&b, r)
			}
		}
	}
	section("ResourceSlices of driver " + w.Driver.DriverName)
	if slices, err := ListDriverSlices(ctx, w.Kube, w.Driver.DriverName); err != nil {
		fmt.Fprintf(&b, "list: %v\n", err)
	} else {
		for i := range slices {
			writeYAML(&b, &slices[i])
		}
	}
	section("Driver pod logs")
	w.writeDriverLogs(ctx, &b)
	return b.Bytes()
}

// writeYAML renders an object without its managed fields.
func writeYAML(b *bytes.Buffer, obj metav1.Object) {
	obj.SetManagedFields(nil)
	data, err := yaml.Marshal(obj)
	if err != nil {
		fmt.Fprintf(b, "# %s: render: %v\n", obj.GetName(), err)
		return
	}
	b.WriteString("---\n")
	b.Write(data)
}

// writeEvents renders the newest maxEvents events, oldest first.
func writeEvents(b *bytes.Buffer, events []corev1.Event) {
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Time.Before(eventTime(events[j]).Time) })
	if len(events) > maxEvents {
		fmt.Fprintf(b, "(%d older events left out)\n", len(events)-maxEvents)
		events = events[len(events)-maxEvents:]
	}
	for _, e := range events {
		fmt.Fprintf(b, "%s %s %s/%s %s: %s (x%d)\n", eventTime(e).UTC().Format("15:04:05"), e.Type,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, strings.TrimSpace(e.Message), max(e.Count, 1))
	}
}

func eventTime(e corev1.Event) metav1.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.Time{Time: e.EventTime.Time}
	}
	return e.FirstTimestamp
}

// writeDriverLogs appends the log tails of the driver's pods.
func (w *World) writeDriverLogs(ctx context.Context, b *bytes.Buffer) {
	if w.Driver.DriverPodSelector == "" {
		b.WriteString("not collected: no driver pod selector configured\n")
		return
	}
	pods, err := w.Kube.CoreV1().Pods(w.Driver.DriverNamespace).List(ctx, metav1.ListOptions{LabelSelector: w.Driver.DriverPodSelector})
	if err != nil {
		fmt.Fprintf(b, "list driver pods (%s): %v\n", w.Driver.DriverPodSelector, err)
		return
	}
	if len(pods.Items) == 0 {
		fmt.Fprintf(b, "no pods match %q in %s\n", w.Driver.DriverPodSelector, NamespaceOrAll(w.Driver.DriverNamespace))
		return
	}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			fmt.Fprintf(b, "--- %s/%s container %s (last %d lines)\n", p.Namespace, p.Name, c.Name, driverLogLines)
			tail := driverLogLines
			data, err := w.podLogs(ctx, p.Namespace, p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail})
			if err != nil {
				fmt.Fprintf(b, "read log: %v\n", err)
				continue
			}
			b.Write(data)
			if len(data) > 0 && data[len(data)-1] != '\n' {
				b.WriteByte('\n')
			}
		}
	}
}

func NamespaceOrAll(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}
