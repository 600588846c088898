package kit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Kinds of objects in the ledger, deleted in this order: pods first, because
// they hold their claims.
const (
	KindPod           = "Pod"
	KindClaim         = "ResourceClaim"
	kindClaimTemplate = "ResourceClaimTemplate"
	// Cluster-scoped objects of the kit's test driver, named after the
	// scenario's namespace.
	KindResourceSlice = "ResourceSlice"
	KindDeviceClass   = "DeviceClass"
	// DeviceTaintRules the scenario created (KEP-5055), cluster-scoped and
	// named after its namespace: cleanup waits until they are gone, so that
	// no taint of the scenario outlives its device lease.
	KindDeviceTaintRule = "DeviceTaintRule"
	// PodGroups and Workloads (scheduling.k8s.io/v1beta1, KEP-5729) go
	// after their pods and before the claims: a PodGroup's generated
	// claims go with it (the garbage collector deletes them once the
	// resourceclaim controller has dropped the group's reservation).
	KindPodGroup = "PodGroup"
	KindWorkload = "Workload"
	// ResourcePoolStatusRequests (KEP-5677), cluster-scoped and named
	// after the scenario's namespace.
	KindPoolStatusRequest = "ResourcePoolStatusRequest"
)

var cleanupOrder = map[string]int{KindDeviceTaintRule: 0, KindPod: 1, KindPodGroup: 2, KindWorkload: 3, KindClaim: 4, kindClaimTemplate: 5, KindResourceSlice: 6, KindDeviceClass: 7, KindPoolStatusRequest: 8}

// ledger records every object a scenario creates so that cleanup can delete
// all of them, even when the scenario failed half-way.
type Ledger struct {
	mu      sync.Mutex
	entries []ledgerEntry
}

type ledgerEntry struct {
	Kind, Name string
}

// add records an object; recording one twice is harmless.
func (l *Ledger) Add(kind, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if e.Kind == kind && e.Name == name {
			return
		}
	}
	l.entries = append(l.entries, ledgerEntry{kind, name})
}

// has says whether an object of the kind is recorded.
func (l *Ledger) Has(kind string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

// Names are the names of the recorded objects of the kind, sorted.
func (l *Ledger) Names(kind string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	for _, e := range l.entries {
		if e.Kind == kind {
			names = append(names, e.Name)
		}
	}
	return SortedCopy(names)
}

// ordered returns the entries in deletion order: by kind, the newest first
// within a kind.
func (l *Ledger) ordered() []ledgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ledgerEntry, len(l.entries))
	for i, e := range l.entries {
		out[len(out)-1-i] = e
	}
	sort.SliceStable(out, func(i, j int) bool { return cleanupOrder[out[i].Kind] < cleanupOrder[out[j].Kind] })
	return out
}

// cleanup deletes everything in the ledger, waits for the pods to be gone
// and then for every claim in the namespace (generated ones included) to be
// gone, so that the next scenario finds the devices free. It reports every
// problem, not just the first.
func (w *World) cleanup(ctx context.Context) error {
	var errs []error
	for i := len(w.Releases) - 1; i >= 0; i-- {
		errs = append(errs, w.Releases[i]())
	}
	w.Releases = nil
	errs = append(errs, CleanupNamespace(ctx, w.Kube, w.Ns, w.Ledger, w.Cfg.Timeouts))
	return errors.Join(errs...)
}

func CleanupNamespace(ctx context.Context, kube kubernetes.Interface, ns string, l *Ledger, timeouts Timeouts) error {
	var errs []error
	var pods, rules []string
	for _, e := range l.ordered() {
		var err error
		switch e.Kind {
		case KindPod:
			err = kube.CoreV1().Pods(ns).Delete(ctx, e.Name, metav1.DeleteOptions{})
			pods = append(pods, e.Name)
		case KindPodGroup:
			err = kube.SchedulingV1beta1().PodGroups(ns).Delete(ctx, e.Name, metav1.DeleteOptions{})
		case KindWorkload:
			err = kube.SchedulingV1beta1().Workloads(ns).Delete(ctx, e.Name, metav1.DeleteOptions{})
		case KindClaim:
			err = kube.ResourceV1().ResourceClaims(ns).Delete(ctx, e.Name, metav1.DeleteOptions{})
		case kindClaimTemplate:
			err = kube.ResourceV1().ResourceClaimTemplates(ns).Delete(ctx, e.Name, metav1.DeleteOptions{})
		case KindResourceSlice:
			err = kube.ResourceV1().ResourceSlices().Delete(ctx, e.Name, metav1.DeleteOptions{})
		case KindDeviceClass:
			err = kube.ResourceV1().DeviceClasses().Delete(ctx, e.Name, metav1.DeleteOptions{})
		case KindDeviceTaintRule:
			err = kube.ResourceV1().DeviceTaintRules().Delete(ctx, e.Name, metav1.DeleteOptions{})
			rules = append(rules, e.Name)
		case KindPoolStatusRequest:
			err = kube.ResourceV1alpha3().ResourcePoolStatusRequests().Delete(ctx, e.Name, metav1.DeleteOptions{})
		default:
			err = fmt.Errorf("unknown kind %s", e.Kind)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s/%s: %w", e.Kind, ns, e.Name, err))
		}
	}
	if len(rules) > 0 {
		err := Poll(ctx, timeouts.Cleanup, fmt.Sprintf("DeviceTaintRules %s to be gone", strings.Join(rules, ", ")), func(ctx context.Context) (bool, string, error) {
			var left []string
			for _, n := range rules {
				if _, err := kube.ResourceV1().DeviceTaintRules().Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					left = append(left, n)
				}
			}
			return len(left) == 0, "still there: " + strings.Join(left, ", "), nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(pods) > 0 {
		err := Poll(ctx, timeouts.PodDelete, fmt.Sprintf("pods %s in %s to be gone", strings.Join(pods, ", "), ns), func(ctx context.Context) (bool, string, error) {
			list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			var left []string
			for _, p := range list.Items {
				left = append(left, fmt.Sprintf("%s (phase %s)", p.Name, p.Status.Phase))
			}
			return len(left) == 0, "still there: " + strings.Join(left, ", "), nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	err := Poll(ctx, timeouts.Cleanup, fmt.Sprintf("the ResourceClaims in %s to be deallocated and deleted", ns), func(ctx context.Context) (bool, string, error) {
		list, err := kube.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		var left []string
		for _, c := range list.Items {
			state := "unallocated"
			if c.Status.Allocation != nil {
				state = "allocated"
			}
			desc := fmt.Sprintf("%s (%s, reserved for %d, finalizers %v, deleting %t)",
				c.Name, state, len(c.Status.ReservedFor), c.Finalizers, c.DeletionTimestamp != nil)
			if c.DeletionTimestamp == nil {
				// Generated claims are deleted by the controller; delete
				// whatever is left explicitly as well.
				if err := kube.ResourceV1().ResourceClaims(ns).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					desc += ": " + err.Error()
				}
			}
			left = append(left, desc)
		}
		return len(left) == 0, "still there: " + strings.Join(left, "; "), nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// pollInterval is how often waits look again.
const PollInterval = 250 * time.Millisecond

// poll calls cond until it reports done, fails, or timeout passes. cond
// returns a short description of what it saw, which the timeout error
// quotes: "timed out after 2m0s waiting for <what>; last seen: <status>".
func Poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (done bool, status string, err error)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		done, status, err := cond(ctx)
		last = status
		return done, err
	})
	if err == nil {
		return nil
	}
	if wait.Interrupted(err) {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped waiting for %s: %w; last seen: %s", what, ctx.Err(), last)
		}
		return fmt.Errorf("timed out after %v waiting for %s; last seen: %s", timeout, what, last)
	}
	return err
}
