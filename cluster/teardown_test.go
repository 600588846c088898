package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"drakit.dev/drakit/cluster/images"
)

// e2eConfig is a cluster apart from the default one: its own short run dir,
// kubelet root base, cgroup root and ports (those of the verified runs of
// local-cluster.md §18.6), so the test never touches a cluster a developer
// has up.
func e2eConfig(t *testing.T) Config {
	t.Helper()
	cfg := DefaultConfig()
	runDir, err := os.MkdirTemp("/tmp", "drakit-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Down removes it; a skipped test leaves it empty. Anything else
		// is left for inspection: RemoveAll could reach through a leftover
		// mount into host files.
		if err := os.Remove(runDir); err != nil && !os.IsNotExist(err) {
			t.Logf("run dir %s left for inspection: %v", runDir, err)
		}
	})
	cfg.RunDir = runDir
	cfg.ImagesDir = t.TempDir()
	cfg.KubeletRootBase = "/run/drakit-e2e"
	cfg.CgroupRoot = "/drakit-e2e"
	cfg.APIServerPort = 16443
	cfg.EtcdClientPort, cfg.EtcdPeerPort, cfg.EtcdMetricsPort = 23792, 23802, 23812
	cfg.ControllerManagerPort, cfg.SchedulerPort = 10277, 10279
	cfg.KubeletPort, cfg.KubeletHealthzPort = 10450, 10448
	cfg.PodDeleteTimeout = 30 * time.Second
	return cfg
}

// skipUnlessClusterCanRun skips, naming what is missing, when the test
// cannot bring a cluster up here.
func skipUnlessClusterCanRun(t *testing.T, cfg Config) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the local cluster end-to-end test")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the local cluster mounts, creates cgroups and runs containers")
	}
	err := checkPrerequisites(cfg)
	switch {
	case err == nil:
	case errors.Is(err, ErrComponentsMissing), errors.Is(err, ErrHostToolMissing):
		t.Skip(err.Error())
	default:
		t.Fatal(err)
	}
	if _, err := lookPath(cfg, "gcc"); err != nil {
		t.Skip("gcc not installed (the pause image is compiled): run scripts/install-deps.sh")
	}
	procs, err := listProcesses()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if filepath.Base(p.Exe) == "kubelet" {
			t.Skipf("a kubelet already runs here (pid %d, %s): its fixed /var/lib/kubelet/device-plugins/kubelet.sock "+
				"would clash with this test's kubelet; stop that cluster (drakit env down) to run this test", p.PID, p.Exe)
		}
	}
}

// hostSnapshot is what must be the same before Up and after Down.
type hostSnapshot struct {
	Paths   map[string]bool   // candidate host paths → exists
	Sysctls map[string]string // the kubelet's sysctls, host values
}

func snapshotHost(t *testing.T, cfg Config) hostSnapshot {
	t.Helper()
	mounts, err := readMountInfo(mountInfoPath)
	if err != nil {
		t.Fatal(err)
	}
	s := hostSnapshot{Paths: map[string]bool{}, Sysctls: map[string]string{}}
	for _, c := range hostPathCandidates(cfg, mounts) {
		_, err := os.Lstat(c.Path)
		s.Paths[c.Path] = err == nil
	}
	for _, p := range []string{"/var/lib/containerd", "/etc/containerd", "/var/run/cdi", "/etc/cdi", "/opt/cni", "/var/log/pods", "/etc/kubernetes", "/run/kubernetes"} {
		_, err := os.Lstat(p)
		s.Paths[p] = err == nil
	}
	for _, sc := range sysctls {
		b, err := os.ReadFile("/proc/sys/" + sc.key)
		if err != nil {
			t.Fatal(err)
		}
		s.Sysctls[sc.key] = strings.TrimSpace(string(b))
	}
	return s
}

// TestUpDownLeavesNothingBehind brings a real cluster up, runs a hostNetwork
// pod on the local pause image, and checks that Down leaves no process, no
// mount, no cgroup, no host path and no state behind, and that the host's
// sysctls were never changed.
func TestUpDownLeavesNothingBehind(t *testing.T) {
	cfg := e2eConfig(t)
	skipUnlessClusterCanRun(t, cfg)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	before := snapshotHost(t, cfg)

	// Down must run even when an assertion below fails.
	downDone := false
	t.Cleanup(func() {
		if !downDone {
			if err := Down(context.Background(), cfg); err != nil {
				t.Errorf("cleanup Down: %v", err)
			}
		}
	})

	t0 := time.Now()
	if err := Up(ctx, cfg); err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("up from cold state: %v", time.Since(t0).Round(time.Millisecond))

	// A second Up finds everything running and starts nothing.
	pidsBefore := readPIDFiles(t, cfg)
	t1 := time.Now()
	if err := Up(ctx, cfg); err != nil {
		t.Fatalf("second Up: %v", err)
	}
	t.Logf("second up (already up): %v", time.Since(t1).Round(time.Millisecond))
	if diff := cmp.Diff(pidsBefore, readPIDFiles(t, cfg)); diff != "" {
		t.Errorf("second Up changed the components' processes (-before +after):\n%s", diff)
	}

	st, err := Status(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Up {
		t.Fatalf("Status after Up: not up: %+v", st)
	}
	var total int64
	for _, c := range st.Components {
		total += c.RSSBytes
		t.Logf("RSS %-24s %4d MiB", c.Name, c.RSSBytes>>20)
	}
	t.Logf("RSS total %d MiB", total>>20)

	// An image assembled with its shared libraries, imported into the
	// running cluster, runs a dynamically linked program in the pod.
	if err := ImportImage(ctx, cfg, buildSleepImage(ctx, t)); err != nil {
		t.Fatal(err)
	}
	pod := runPod(ctx, t, cfg)
	checkServiceAccountToken(t, cfg, pod)
	checkLocalAccessRefused(ctx, t, cfg, pod)
	if after := snapshotHost(t, cfg); !cmp.Equal(before.Sysctls, after.Sysctls) {
		t.Errorf("host sysctls changed while the kubelet runs:\n%s", cmp.Diff(before.Sysctls, after.Sysctls))
	}

	// Everything the cluster runs, recorded before Down.
	recorded := recordClusterProcesses(t, cfg, pidsBefore)
	if len(recorded) < len(Components())+3 { // + a shim, the sandbox and the containers
		t.Errorf("recorded only %d processes before Down (%v); want the components, a shim and the pod's containers", len(recorded), recorded)
	}

	t2 := time.Now()
	if err := Down(ctx, cfg); err != nil {
		t.Fatalf("Down: %v", err)
	}
	downDone = true
	t.Logf("down: %v", time.Since(t2).Round(time.Millisecond))

	assertNothingLeft(t, cfg, before, recorded)

	// Down again: nothing to do, no error.
	if err := Down(ctx, cfg); err != nil {
		t.Errorf("second Down: %v", err)
	}
}

func readPIDFiles(t *testing.T, cfg Config) map[string]procRef {
	t.Helper()
	refs := map[string]procRef{}
	for _, c := range Components() {
		ref, err := readPIDFile(pidPath(cfg, c))
		if err != nil {
			t.Fatalf("PID file of %s: %v", c, err)
		}
		if !ref.alive() {
			t.Errorf("%s (pid %d) is not running", c, ref.PID)
		}
		refs[c] = ref
	}
	return refs
}

// buildSleepImage assembles the image of runPod's second container, a
// dynamically linked /bin/sleep with its shared libraries, and returns its
// archive.
func buildSleepImage(ctx context.Context, t *testing.T) string {
	t.Helper()
	archive := filepath.Join(t.TempDir(), "sleep.tar")
	if err := images.Build(ctx, images.Spec{
		Name: "drakit.dev/e2e-sleep:dev", Files: map[string]string{"/bin/sleep": "/bin/sleep"},
		Entrypoint: []string{"/bin/sleep", "3600"}, WithSharedLibraries: true,
	}, archive); err != nil {
		t.Fatal(err)
	}
	return archive
}

// runPod runs a hostNetwork pod with two containers, the pause image and
// the dynamically linked sleep image, and waits for both to run.
func runPod(ctx context.Context, t *testing.T, cfg Config) *corev1.Pod {
	t.Helper()
	client, err := Client(cfg)
	if err != nil {
		t.Fatal(err)
	}
	grace := int64(5)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Namespace: "default"},
		Spec: corev1.PodSpec{
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{
				{Name: "pause", Image: images.PauseImage, ImagePullPolicy: corev1.PullNever},
				{Name: "sleep", Image: "drakit.dev/e2e-sleep:dev", ImagePullPolicy: corev1.PullNever},
			},
		},
	}
	t0 := time.Now()
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := client.CoreV1().Pods("default").Get(ctx, "pause", metav1.GetOptions{})
		if err == nil && got.Status.Phase == corev1.PodRunning && allContainersRunning(got) {
			t.Logf("pod Running after %v (pod IP %s)", time.Since(t0).Round(time.Millisecond), got.Status.PodIP)
			if got.Status.PodIP != cfg.NodeName {
				t.Errorf("hostNetwork pod IP %s, want the node's %s", got.Status.PodIP, cfg.NodeName)
			}
			return got
		}
		if time.Now().After(deadline) {
			kubelet, _ := Logs(cfg, Kubelet, 40)
			t.Fatalf("pod not Running after 60s: %+v, err %v\nkubelet log:\n%s", got.Status, err, kubelet)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// checkServiceAccountToken checks that the pod's container sees its service
// account token, which the kubelet mounts (tmpfs) in its own mount namespace:
// it reaches containerd only through the shared kubelet root dir.
func checkServiceAccountToken(t *testing.T, cfg Config, pod *corev1.Pod) {
	t.Helper()
	procs, err := listProcesses()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range procs {
		if !p.inCgroup(cfg.CgroupRoot) || !strings.Contains(strings.Join(p.Cgroups, " "), "pod"+string(pod.UID)) {
			continue
		}
		token, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/var/run/secrets/kubernetes.io/serviceaccount/token", p.PID))
		if err == nil && len(token) > 0 {
			found++
		}
	}
	if found == 0 {
		t.Errorf("no process of pod %s sees a service account token at /var/run/secrets/kubernetes.io/serviceaccount/token", pod.UID)
	}
}

func allContainersRunning(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return len(pod.Status.ContainerStatuses) == len(pod.Spec.Containers)
}

// recordClusterProcesses returns every process of a running cluster: the
// components of its PID files and what owned attributes to it (shims,
// containers), by PID.
func recordClusterProcesses(t *testing.T, cfg Config, components map[string]procRef) map[int]string {
	t.Helper()
	recorded := map[int]string{}
	for name, ref := range components {
		recorded[ref.PID] = name
	}
	procs, err := listProcesses()
	if err != nil {
		t.Fatal(err)
	}
	hostPaths, err := readLedger(ledgerPath(cfg))
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := readMountInfo(mountInfoPath)
	if err != nil {
		t.Fatal(err)
	}
	cgroupRoots := ownCgroupRoots(cfg, hostPaths, mounts)
	if len(cgroupRoots) == 0 {
		t.Errorf("the ledger records none of the cluster's cgroup roots %v", cgroupRootDirs(cfg, mounts))
	}
	for _, p := range procs {
		if owned(cfg, cgroupRoots, p) {
			recorded[p.PID] = strings.Join(p.Cmdline, " ")
		}
	}
	return recorded
}

// assertNothingLeft checks the host after Down: none of the recorded
// processes runs, no process references the cluster, nothing is mounted
// under the run dir, no cgroup, host path, run dir or port is left, the host
// paths and sysctls are as before Up, and the image cache is kept.
func assertNothingLeft(t *testing.T, cfg Config, before hostSnapshot, recorded map[int]string) {
	t.Helper()
	for pid, what := range recorded {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			if state, _, err := procStat(pid); err == nil && state != 'Z' {
				t.Errorf("process %d (%s) still runs after Down", pid, what)
			}
		}
	}
	procs, err := listProcesses()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if state, _, err := procStat(p.PID); err != nil || state == 'Z' {
			continue // gone, or dead and waiting for init to reap it
		}
		for _, n := range cfg.nodes() {
			if p.references(cfg.RunDir) || p.inCgroup(cgroupRoot(n)) {
				t.Errorf("process %d (%s, cwd %s) references the cluster after Down", p.PID, strings.Join(p.Cmdline, " "), p.Cwd)
			}
		}
	}
	mounts, err := readMountInfo(mountInfoPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mountsUnder(mounts, mountRoots(cfg)...) {
		t.Errorf("still mounted after Down: %s (%s)", m.MountPoint, m.FSType)
	}
	for _, dir := range cgroupRootDirs(cfg, mounts) {
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("cgroup %s left behind", dir)
		}
	}
	if diff := cmp.Diff(before, snapshotHost(t, cfg)); diff != "" {
		t.Errorf("host paths or sysctls differ from before Up (-before +after):\n%s", diff)
	}
	if _, err := os.Stat(cfg.RunDir); !os.IsNotExist(err) {
		t.Errorf("run dir %s still exists after Down (err %v)", cfg.RunDir, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.ImagesDir, PauseArchive)); err != nil {
		t.Errorf("Down removed the images cache: %v", err)
	}
	for _, p := range cfg.ports() {
		if err := portFree("127.0.0.1", p.port, portFreeWait); err != nil {
			t.Errorf("%s %d still in use %v after Down: %v", p.field, p.port, portFreeWait, err)
		}
	}
	for _, n := range cfg.nodes()[1:] {
		for _, port := range componentPorts(n, Kubelet) {
			if err := portFree(nodeName(n), port, portFreeWait); err != nil {
				t.Errorf("kubelet port %s:%d still in use after Down: %v", nodeName(n), port, err)
			}
		}
	}

}
