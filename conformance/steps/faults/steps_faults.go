package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/conformance/kit"
)

// faultSteps inject faults on the node: they catch the driver in the middle
// of a MIG change by holding the emulator's NVML state lock (every MIG change
// of the emulator's NVML takes it), and kill the driver there.
func (w *world) faultSteps() []kit.StepDef {
	return []kit.StepDef{
		// Holding the lock and killing the driver disturb every scenario's
		// devices.
		{Pattern: `^the kit can hold the node's NVML state lock$`, Fn: w.canHoldNVMLLock, Needs: kit.NeedsExclusive},
		{Pattern: `^the node's NVML state lock is held$`, Fn: w.holdNVMLLock},
		{Pattern: `^the driver is killed while it changes the node's MIG devices for pod "([^"]+)"$`, Fn: w.killDriverInMIGChange},
	}
}

// nvmlLockPath is the emulator's NVML state lock, relative to its root
// (docs/architecture.md, the NVML state contract).
const nvmlLockPath = "run/drakit-emulator/nvml.state.lock"

const noEmulatorRootReason = "the kit cannot reach the node's emulated hardware: no --node-emulator-root (a real node has no NVML state lock to hold)"

func (w *world) canHoldNVMLLock(ctx context.Context) (context.Context, error) {
	if w.Driver.Hardware {
		return kit.Skip(ctx, kit.HardwareSkipReason)
	}
	if w.Cfg.NodeEmulatorRoot == "" {
		return kit.Skip(ctx, noEmulatorRootReason)
	}
	if w.Driver.DriverPodSelector == "" {
		return kit.Skip(ctx, kit.RestartSkipReason)
	}
	dir := filepath.Join(w.Cfg.NodeEmulatorRoot, filepath.Dir(nvmlLockPath))
	if _, err := os.Stat(dir); err != nil {
		return ctx, fmt.Errorf("node emulator root %s: no NVML state directory %s: %w", w.Cfg.NodeEmulatorRoot, dir, err)
	}
	return ctx, nil
}

// holdNVMLLock takes the emulator's NVML state lock for the scenario; the
// scenario's cleanup releases it.
func (w *world) holdNVMLLock() error {
	path := filepath.Join(w.Cfg.NodeEmulatorRoot, nvmlLockPath)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open the NVML state lock: %w", err)
	}
	// A MIG change in progress holds it briefly.
	deadline := time.Now().Add(w.Cfg.Timeouts.API)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return fmt.Errorf("lock %s: %w", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.Releases = append(w.Releases, func() error {
		if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			return fmt.Errorf("release the NVML state lock: %w", err)
		}
		return nil
	})
	w.HeldLock = f
	return nil
}

// killDriverInMIGChange waits until a process of one of the driver's pods
// waits for the held NVML state lock (it is preparing the pod's claim and has
// reached the MIG change), SIGKILLs that process, waits until it is gone,
// releases the lock, and waits until the driver pod runs again. It then has
// the kubelet retry the pod until it starts its containers (each annotation
// update makes the kubelet sync the pod) instead of waiting for its periodic
// resync a minute or more later; a retry before the driver has registered
// again fails as the first attempt did.
func (w *world) killDriverInMIGChange(ctx context.Context, podName string) error {
	if _, err := w.Pod(podName); err != nil {
		return err
	}
	if w.HeldLock == nil {
		return errors.New("the NVML state lock is not held: a step \"the node's NVML state lock is held\" must come first")
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(w.HeldLock.Fd()), &st); err != nil {
		return fmt.Errorf("stat the NVML state lock: %w", err)
	}
	var victim int
	err := kit.Poll(ctx, w.Cfg.Timeouts.PodStart, "a driver process to wait for the NVML state lock", func(ctx context.Context) (bool, string, error) {
		waiters, err := lockWaiters("/proc/locks", uint32(unix.Major(st.Dev)), uint32(unix.Minor(st.Dev)), st.Ino)
		if err != nil {
			return false, "", err
		}
		if len(waiters) == 0 {
			return false, "no process waits for it", nil
		}
		pods, err := w.Kube.CoreV1().Pods(w.Driver.DriverNamespace).List(ctx, metav1.ListOptions{LabelSelector: w.Driver.DriverPodSelector})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, pid := range waiters {
			cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
			if err != nil {
				continue
			}
			for _, p := range pods.Items {
				if inPodCgroup(string(cg), string(p.UID)) {
					victim = pid
					return true, "", nil
				}
			}
		}
		return false, fmt.Sprintf("waiting processes %v belong to no driver pod (%s)", waiters, w.Driver.DriverPodSelector), nil
	})
	if err != nil {
		return err
	}
	driverPods, err := w.Kube.CoreV1().Pods(w.Driver.DriverNamespace).List(ctx, metav1.ListOptions{LabelSelector: w.Driver.DriverPodSelector})
	if err != nil {
		return fmt.Errorf("list the driver's pods: %w", err)
	}
	restarts := map[types.UID]int32{}
	for _, p := range driverPods.Items {
		restarts[p.UID] = restartCount(&p)
	}
	_, start, err := procStart(victim)
	if err != nil {
		return fmt.Errorf("driver process %d: %w", victim, err)
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill driver process %d: %w", victim, err)
	}
	klog.FromContext(ctx).Info("Killed the driver while it waited for the NVML state lock", "pid", victim)
	err = kit.Poll(ctx, w.Cfg.Timeouts.PodDelete, fmt.Sprintf("driver process %d to be gone", victim), func(context.Context) (bool, string, error) {
		state, now, err := procStart(victim)
		gone := err != nil || now != start || state == 'Z'
		return gone, "still there", nil
	})
	if err != nil {
		return err
	}
	if err := w.HeldLock.Close(); err != nil {
		return fmt.Errorf("release the NVML state lock: %w", err)
	}
	err = kit.Poll(ctx, w.Cfg.Timeouts.PodStart, "the killed driver container to run again", func(ctx context.Context) (bool, string, error) {
		list, err := w.Kube.CoreV1().Pods(w.Driver.DriverNamespace).List(ctx, metav1.ListOptions{LabelSelector: w.Driver.DriverPodSelector})
		if err != nil {
			return false, err.Error(), nil
		}
		var seen []string
		for i := range list.Items {
			p := &list.Items[i]
			if before, ok := restarts[p.UID]; ok && restartCount(p) > before && kit.PodReady(p) {
				return true, "", nil
			}
			seen = append(seen, fmt.Sprintf("%s (%s, %d restarts)", p.Name, kit.DescribePod(p), restartCount(p)))
		}
		return false, strings.Join(seen, "; "), nil
	})
	if err != nil {
		return err
	}
	// The container runs before the driver has registered with the kubelet
	// again: nudge until the kubelet has started the pod's containers.
	var nudged time.Time
	return kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("the kubelet to start pod %s after the driver's restart", podName), func(ctx context.Context) (bool, string, error) {
		pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if len(pod.Status.ContainerStatuses) > 0 && pod.Status.ContainerStatuses[0].State.Waiting == nil {
			return true, "", nil
		}
		if time.Since(nudged) >= time.Second {
			nudged = time.Now()
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"drakit.dev/retry-after-driver-kill":%q}}}`, nudged.UTC().Format(time.RFC3339Nano))
			if _, err := w.Kube.CoreV1().Pods(w.Ns).Patch(ctx, podName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return false, "", fmt.Errorf("annotate pod %s to have the kubelet retry it: %w", podName, err)
			}
		}
		return false, kit.DescribePod(pod), nil
	})
}

// restartCount sums the restarts of a pod's containers.
func restartCount(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// lockWaiters returns the PIDs that wait for a lock on the inode (device
// major:minor, inode number) in a /proc/locks file: the kernel lists them as
// "N: -> FLOCK  ADVISORY  WRITE <pid> <maj>:<min>:<inode> 0 EOF", major and
// minor in hex.
func lockWaiters(path string, major, minor uint32, inode uint64) ([]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the kernel's lock table: %w", err)
	}
	defer f.Close()
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, inode)
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 7 || fields[1] != "->" {
			continue
		}
		if fields[6] != want {
			continue
		}
		if pid, err := strconv.Atoi(fields[5]); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, sc.Err()
}

// inPodCgroup reports whether a /proc/<pid>/cgroup content places the process
// in the pod with that UID, for the cgroupfs ("pod<uid>") and the systemd
// ("pod<uid with underscores>.slice") cgroup drivers.
func inPodCgroup(procCgroup, uid string) bool {
	return strings.Contains(procCgroup, "/pod"+uid+"/") ||
		strings.Contains(procCgroup, "pod"+strings.ReplaceAll(uid, "-", "_")+".slice")
}

// procStart reads a process's state and start time (clock ticks since boot)
// from /proc/<pid>/stat; the pair tells a PID's reuse apart.
func procStart(pid int) (byte, uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %q", pid, s)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %q", pid, s)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat start time: %w", pid, err)
	}
	return fields[0][0], start, nil
}
