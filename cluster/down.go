package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// ErrTeardownIncomplete is wrapped when Down could not remove everything;
// RunDir is then kept so that a second Down can finish the job.
var ErrTeardownIncomplete = errors.New("teardown incomplete")

// Down tears the cluster down and removes its state. See the package doc.
func Down(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	logger := klog.FromContext(ctx)
	began := time.Now()
	_, exists, err := ownedRunDir(cfg)
	if err != nil {
		return err
	}
	if !exists {
		logger.Info("Cluster not present, nothing to stop", "runDir", cfg.RunDir)
		return nil
	}
	if cfg, err = withRecordedNodes(cfg); err != nil {
		return err
	}
	hostPaths, err := readLedger(ledgerPath(cfg))
	if err != nil {
		return err
	}

	var errs []error
	if err := deleteAllPods(ctx, cfg, hostPaths); err != nil {
		// Carry on: whatever the kubelet left is killed below.
		logger.Info("Could not delete every pod through the API; leftovers are killed", "err", err)
	}
	// Stop order (§18.6, with the controller-manager and scheduler possibly
	// stopped already by deleteAllPods): the nodes first (all kubelets, then
	// every node's sandboxes and containerd, the nodes in parallel), the
	// store last.
	if err := onEveryNode(cfg, func(n Config) error { return stopComponent(ctx, n, Kubelet) }); err != nil {
		errs = append(errs, err)
	}
	if err := onEveryNode(cfg, func(n Config) error {
		removeSandboxes(ctx, n)
		return stopComponent(ctx, n, Containerd)
	}); err != nil {
		errs = append(errs, err)
	}
	for _, name := range []string{Scheduler, ControllerManager, APIServer, Etcd} {
		if err := stopComponent(ctx, cfg, name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := killLeftovers(ctx, cfg, hostPaths); err != nil {
		errs = append(errs, err)
	}
	n, foreign, err := unmountOwn(cfg)
	if err != nil {
		errs = append(errs, err)
	}
	if n > 0 {
		logger.Info("Unmounted", "mounts", n, "under", cfg.RunDir)
	}
	removed, err := removeLedgerPaths(hostPaths)
	if err != nil {
		errs = append(errs, err)
	}
	if len(removed) > 0 {
		logger.Info("Removed host paths the cluster created", "paths", strings.Join(removed, " "))
	}
	reportForeignProcesses(ctx, cfg)

	// Remove the state only with nothing mounted below it: RemoveAll would
	// descend into a mount and delete what it shows (a host path volume).
	switch {
	case len(foreign) > 0:
		errs = append(errs, fmt.Errorf("keeping %s: %s is mounted there (%s) and the cluster did not mount it: %w; unmount it yourself",
			cfg.RunDir, foreign[0].MountPoint, foreign[0].FSType, ErrNotOwned))
	case len(errs) == 0:
		if err := os.RemoveAll(cfg.RunDir); err != nil {
			errs = append(errs, fmt.Errorf("remove run dir: %w", err))
		}
	default:
		errs = append(errs, fmt.Errorf("keeping %s for another `drakit env down`", cfg.RunDir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrTeardownIncomplete, err)
	}
	logger.Info("Cluster down", "took", since(began))
	return nil
}

// onEveryNode runs f for every node's config at once and joins the errors.
func onEveryNode(cfg Config, f func(node Config) error) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, n := range cfg.nodes() {
		wg.Go(func() {
			if err := f(n); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("node %s: %w", nodeName(n), err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopComponent stops one component (of the node cfg is narrowed to) by its
// PID file.
func stopComponent(ctx context.Context, cfg Config, name string) error {
	p, err := runningProcess(cfg, name)
	if err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	if p == nil {
		return nil
	}
	t0 := time.Now()
	if err := stopProcess(ctx, p.ref, cfg.StopTimeout); err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	logger := klog.FromContext(ctx)
	if name == Kubelet || name == Containerd {
		logger = logger.WithValues("node", nodeName(cfg))
	}
	logger.Info("Stopped", "component", name, "pid", p.ref.PID, "after", since(t0))
	return nil
}

// deleteAllPods deletes every pod through the API while the kubelet still
// runs, so that it stops their containers (and a DRA driver unprepares their
// claims). Pods with resource claims go first, while the driver pods are still
// there; then the controller-manager and scheduler are stopped so that no
// controller recreates a pod, and the remaining pods are deleted. Pods still
// there after PodDeleteTimeout are deleted with grace period 0. It finally
// waits, within the same timeout, until no container process is left.
func deleteAllPods(ctx context.Context, cfg Config, hostPaths ledger) error {
	checks := probes(cfg)
	if err := checks[APIServer](ctx); err != nil {
		return fmt.Errorf("apiserver is not ready: %w", err)
	}
	// Without a kubelet nothing would stop a node's containers: waiting for
	// the pods to terminate would only run into the timeout.
	for _, n := range cfg.nodes() {
		if p, err := runningProcess(n, Kubelet); err != nil || p == nil {
			return fmt.Errorf("kubelet of node %s is not running", nodeName(n))
		}
		if err := probes(n)[Kubelet](ctx); err != nil {
			return fmt.Errorf("kubelet of node %s is not healthy: %w", nodeName(n), err)
		}
	}
	client, err := Client(cfg)
	if err != nil {
		return err
	}
	withClaims := func(p *corev1.Pod) bool { return len(p.Spec.ResourceClaims) > 0 }
	all := func(*corev1.Pod) bool { return true }
	if err := deletePods(ctx, cfg, client, withClaims); err != nil {
		return err
	}
	for _, name := range []string{ControllerManager, Scheduler} {
		if err := stopComponent(ctx, cfg, name); err != nil {
			return err
		}
	}
	if err := deletePods(ctx, cfg, client, all); err != nil {
		return err
	}
	return waitContainersGone(ctx, cfg, hostPaths)
}

// deletePods deletes the pods match selects and waits until they are gone.
func deletePods(ctx context.Context, cfg Config, client kubernetes.Interface, match func(*corev1.Pod) bool) error {
	logger := klog.FromContext(ctx)
	list := func() ([]corev1.Pod, error) {
		pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list pods: %w", err)
		}
		var out []corev1.Pod
		for i := range pods.Items {
			if match(&pods.Items[i]) {
				out = append(out, pods.Items[i])
			}
		}
		return out, nil
	}
	pods, err := list()
	if err != nil || len(pods) == 0 {
		return err
	}
	t0 := time.Now()
	count := len(pods)
	for _, p := range pods {
		err := client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	deadline := t0.Add(cfg.PodDeleteTimeout)
	forced := false
	for {
		pods, err := list()
		if err != nil {
			return err
		}
		if len(pods) == 0 {
			logger.Info("Deleted pods", "count", count, "after", since(t0))
			return nil
		}
		if time.Now().After(deadline) {
			if forced {
				return fmt.Errorf("pods still present after forced deletion: %s", podNames(pods))
			}
			logger.Info("Pods did not terminate in time; deleting them with grace period 0", "pods", podNames(pods))
			zero := int64(0)
			for _, p := range pods {
				err := client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				if err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("force-delete pod %s/%s: %w", p.Namespace, p.Name, err)
				}
			}
			forced = true
			deadline = time.Now().Add(10 * time.Second)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func podNames(pods []corev1.Pod) string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Namespace + "/" + p.Name
	}
	return strings.Join(names, " ")
}

// waitContainersGone waits until no process is left in the kubelet's cgroup
// root, i.e. the kubelet has stopped every container of the deleted pods.
func waitContainersGone(ctx context.Context, cfg Config, hostPaths ledger) error {
	mounts, err := readMountInfo(mountInfoPath)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(cfg.PodDeleteTimeout)
	for {
		pids := pidsInCgroups(ownCgroupRoots(cfg, hostPaths, mounts))
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("container processes still running after %v: %v", cfg.PodDeleteTimeout, pids)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// removeSandboxes asks containerd, through crictl, to stop and remove every
// pod sandbox that is left, so the shims exit and unmount cleanly before
// containerd stops. Failures only leave more for killLeftovers.
func removeSandboxes(ctx context.Context, cfg Config) {
	if p, err := runningProcess(cfg, Containerd); err != nil || p == nil {
		return
	}
	crictl, err := BinaryPath(cfg, "crictl")
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.PodDeleteTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, crictl, "--config", crictlConfigPath(cfg), "rmp", "--all", "--force")
	cmd.Env = childEnv(cfg)
	out, err := cmd.CombinedOutput()
	logger := klog.FromContext(ctx)
	if err != nil {
		logger.Info("crictl rmp failed; leftover sandboxes are killed", "err", err, "output", strings.TrimSpace(string(out)))
		return
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		logger.V(1).Info("Removed pod sandboxes", "output", s)
	}
}

// owned reports whether a leftover process is provably the cluster's: a
// process in one of the cluster's own cgroup roots (a container a kubelet
// started), or a containerd shim run from the cluster's shim binary whose
// -address is exactly one of the nodes' containerd sockets (that containerd
// started it).
func owned(cfg Config, cgroupRoots []string, p procInfo) bool {
	for _, dir := range cgroupRoots {
		for _, n := range cfg.nodes() {
			if filepath.Base(dir) == strings.TrimPrefix(cgroupRoot(n), "/") && p.inCgroup(cgroupRoot(n)) {
				return true
			}
		}
	}
	shim, err := BinaryPath(cfg, "containerd-shim-runc-v2")
	if err != nil || strings.TrimSuffix(p.Exe, " (deleted)") != shim {
		return false
	}
	for i := 0; i+1 < len(p.Cmdline); i++ {
		if p.Cmdline[i] != "-address" && p.Cmdline[i] != "--address" {
			continue
		}
		for _, n := range cfg.nodes() {
			if p.Cmdline[i+1] == ContainerdSocket(n) {
				return true
			}
		}
	}
	return false
}

// killLeftovers SIGKILLs the processes owned reports, and waits for them.
func killLeftovers(ctx context.Context, cfg Config, hostPaths ledger) error {
	mounts, err := readMountInfo(mountInfoPath)
	if err != nil {
		return err
	}
	cgroupRoots := ownCgroupRoots(cfg, hostPaths, mounts)
	procs, err := listProcesses()
	if err != nil {
		return err
	}
	var refs []procRef
	for _, p := range procs {
		if !owned(cfg, cgroupRoots, p) {
			continue
		}
		ref, err := refOf(p.PID)
		if err != nil {
			continue // already gone
		}
		klog.FromContext(ctx).Info("Killing leftover process", "pid", p.PID, "cmdline", strings.Join(p.Cmdline, " "))
		if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill leftover process %d: %w", p.PID, err)
		}
		refs = append(refs, ref)
	}
	for _, r := range refs {
		if !waitGone(ctx, r, 10*time.Second) {
			return fmt.Errorf("leftover process %d survived SIGKILL", r.PID)
		}
	}
	return nil
}

// reportForeignProcesses logs processes that still reference RunDir but
// that Down cannot prove it started (for example a driver run by hand with
// paths under RunDir); they are left alone.
func reportForeignProcesses(ctx context.Context, cfg Config) {
	procs, err := listProcesses()
	if err != nil {
		return
	}
	for _, p := range procs {
		if p.references(cfg.RunDir) {
			klog.FromContext(ctx).Info("Process not started by the cluster still uses its run dir; leaving it alone",
				"pid", p.PID, "cmdline", strings.Join(p.Cmdline, " "), "cwd", p.Cwd)
		}
	}
}
