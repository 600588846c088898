package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestWaitReadyReportsCrash checks that a component that exits while Up
// waits for it is reported at once, with its exit status and log tail.
func TestWaitReadyReportsCrash(t *testing.T) {
	cfg := testConfig(t)
	cfg.StartTimeout = time.Minute
	t0 := time.Now()
	p, err := startProcess(cfg, Etcd, []string{"/bin/sh", "-c", "echo 'listen tcp 127.0.0.1:23790: bind: address already in use' >&2; exit 3"})
	// On a loaded machine the shell may be gone before startProcess has
	// recorded it; then startProcess itself must report the crash.
	if err == nil {
		err = waitReady(context.Background(), cfg, p, func(context.Context) error { return errors.New("connection refused") })
	}
	if !errors.Is(err, ErrComponentExited) {
		t.Fatalf("waitReady = %v, want ErrComponentExited", err)
	}
	if time.Since(t0) > 10*time.Second {
		t.Errorf("crash reported after %v, want at once", time.Since(t0))
	}
	for _, want := range []string{"exit status 3", "address already in use", LogPath(cfg, Etcd)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestWaitReadyTimesOut(t *testing.T) {
	cfg := testConfig(t)
	cfg.StartTimeout = 300 * time.Millisecond
	p, err := startProcess(cfg, Scheduler, []string{"/bin/sh", "-c", "echo starting; exec sleep 30"})
	if err != nil {
		t.Fatal(err)
	}
	defer stopProcess(context.Background(), p.ref, time.Second)
	err = waitReady(context.Background(), cfg, p, func(context.Context) error { return errors.New("GET /readyz: 500") })
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "GET /readyz: 500") || !strings.Contains(err.Error(), "starting") {
		t.Errorf("waitReady = %v, want ErrNotReady with the last probe error and the log", err)
	}
}

func TestStartAndStopProcess(t *testing.T) {
	cfg := testConfig(t)
	// A process that ignores SIGTERM needs SIGKILL after StopTimeout.
	p, err := startProcess(cfg, Containerd, []string{"/bin/sh", "-c", "trap '' TERM; echo up; exec sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	found, err := runningProcess(cfg, Containerd)
	if err != nil || found == nil || found.ref != p.ref {
		t.Fatalf("runningProcess = %+v, %v; want %v", found, err, p.ref)
	}
	// Started in its own session, in RunDir, without proxy settings.
	sid, err := os.ReadFile("/proc/" + strconv.Itoa(p.ref.PID) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(sid)[strings.LastIndexByte(string(sid), ')')+1:])
	if fields[3] != strconv.Itoa(p.ref.PID) { // field 6, the session ID
		t.Errorf("session ID %s, want the process's own %d", fields[3], p.ref.PID)
	}
	if cwd, _ := os.Readlink("/proc/" + strconv.Itoa(p.ref.PID) + "/cwd"); cwd != cfg.RunDir {
		t.Errorf("cwd %s, want %s", cwd, cfg.RunDir)
	}

	time.Sleep(200 * time.Millisecond) // let the trap take effect
	t0 := time.Now()
	if err := stopProcess(context.Background(), p.ref, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 500*time.Millisecond {
		t.Errorf("stopped after %v: SIGTERM should have been ignored until the timeout", d)
	}
	if p.ref.alive() {
		t.Error("process survived stopProcess")
	}
	// The goroutine that reaps the child notices the exit a moment after
	// stopProcess sees the process gone.
	deadline := time.Now().Add(5 * time.Second)
	for gone, _ := p.exited(); !gone; gone, _ = p.exited() {
		if time.Now().After(deadline) {
			t.Fatal("exited() = false 5s after the process was killed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if found, err := runningProcess(cfg, Containerd); err != nil || found != nil {
		t.Errorf("runningProcess after stop = %+v, %v; want nil", found, err)
	}
	if log, _ := Logs(cfg, Containerd, 0); !strings.Contains(log, "=== drakit") || !strings.Contains(log, "up\n") {
		t.Errorf("log lacks the start header or the output:\n%s", log)
	}
}

func TestChildEnv(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
	t.Setenv("http_proxy", "http://proxy.example:3128")
	t.Setenv("NOTIFY_SOCKET", "/run/systemd/notify")
	t.Setenv("DRAKIT_TEST_KEEP", "1")
	cfg := DefaultConfig()
	cfg.ComponentsDir = "/c"
	env := childEnv(cfg)
	var keys []string
	var path string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
		if k == "PATH" {
			path = v
		}
	}
	for _, k := range []string{"HTTPS_PROXY", "http_proxy", "NOTIFY_SOCKET"} {
		if strings.Contains(" "+strings.Join(keys, " ")+" ", " "+k+" ") {
			t.Errorf("child environment keeps %s", k)
		}
	}
	if !strings.Contains(strings.Join(env, "\n"), "DRAKIT_TEST_KEEP=1") {
		t.Error("child environment dropped an ordinary variable")
	}
	dirs := filepath.SplitList(path)
	if diff := cmp.Diff([]string{"/c/containerd-v2.4.2/bin", "/c/kubernetes-v1.37.2/bin"}, dirs[:2]); diff != "" {
		t.Errorf("PATH must start with the component dirs (-want +got):\n%s", diff)
	}
	if !strings.Contains(path, "/usr/sbin") {
		t.Errorf("PATH %s lacks /usr/sbin (runc)", path)
	}
}

func TestLogsAndStatusWithoutCluster(t *testing.T) {
	cfg := testConfig(t)
	if _, err := Logs(cfg, "dockerd", 10); !errors.Is(err, ErrUnknownComponent) {
		t.Errorf("Logs(dockerd) = %v, want ErrUnknownComponent", err)
	}
	if _, err := Logs(cfg, Kubelet, 10); err == nil || !strings.Contains(err.Error(), "never started") {
		t.Errorf("Logs(kubelet) with no log = %v", err)
	}
	st, err := Status(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st.Up || st.NodeState != "absent" || len(st.Components) != len(Components()) {
		t.Errorf("Status of an absent cluster = %+v", st)
	}
	for _, c := range st.Components {
		if c.Running || c.Healthy || c.PID != 0 {
			t.Errorf("component %s of an absent cluster: %+v", c.Name, c)
		}
	}
	if st.Kubeconfig != KubeconfigPath(cfg) || st.CDIDir != CDIDir(cfg) || st.KubeletRootDir != KubeletRootDir(cfg) || st.EmulatorRoot != EmulatorRoot(cfg) {
		t.Errorf("Status paths = %+v", st)
	}
}

func TestUpPrerequisites(t *testing.T) {
	cfg := testConfig(t) // an empty ComponentsDir
	err := Up(context.Background(), cfg)
	want := ErrComponentsMissing
	if os.Geteuid() != 0 {
		want = ErrNotRoot
	}
	if !errors.Is(err, want) {
		t.Fatalf("Up = %v, want %v", err, want)
	}
	if want == ErrComponentsMissing && !strings.Contains(err.Error(), "run scripts/build-components.sh") {
		t.Errorf("error %q does not say how to build the components", err)
	}
	cfg.NodeName = "node1"
	if err := Up(context.Background(), cfg); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Up with a bad config = %v, want ErrInvalidConfig", err)
	}
}

func TestImportImageNeedsCluster(t *testing.T) {
	cfg := testConfig(t)
	if err := ImportImage(context.Background(), cfg, "/nonexistent.tar"); !errors.Is(err, ErrNotUp) {
		t.Errorf("ImportImage without a cluster = %v, want ErrNotUp", err)
	}
}
