package interpose

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	dhv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// startFakePod serves one pod of a driver with per-pod socket names, as
// kubeletplugin.RollingUpdate names them: the registration socket in
// regDir (the kubelet plugin library's own choice of name, hashed when the
// full one is too long) and dra-<pod UID>.sock in pluginDir.
func startFakePod(t *testing.T, dir, regDir, pluginDir string, uid types.UID, versions ...string) *fakeDriver {
	t.Helper()
	regSocket := filepath.Join(regDir, kubeletplugin.RollingUpdateRegistrarSocketFile(regDir, fakeName, uid))
	return startFakeInstance(t, dir, regSocket, filepath.Join(pluginDir, "dra-"+string(uid)+".sock"), registerapi.DRAPlugin, versions...)
}

// backdate sets a socket's modification time in the past: a pod started
// earlier (the kernel's file times are only as fine as its clock tick).
func backdate(t *testing.T, socket string) {
	t.Helper()
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(socket, old, old); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond for up to five seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestFollowsRollingUpdate: with per-pod socket names, the interposer finds
// the driver's pod in its registrar directory, moves to the new pod a
// rolling update starts (which gets the kubelet's registration status from
// it), keeps serving when the old pod goes, and finds the next pod after a
// gap with no pod at all; the kubelet's registration stays the one it
// registered. Both of the library's socket names are covered: the full
// <driver>-<pod UID>-reg.sock and the hashed one of a long directory.
func TestFollowsRollingUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		regDir func(dir string) string
		hashed bool
	}{
		{"full names", func(dir string) string { return filepath.Join(dir, "reg") }, false},
		{"hashed names", func(dir string) string { return filepath.Join(dir, strings.Repeat("r", 30)) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := shortTempDir(t)
			regDir, pluginDir := tc.regDir(dir), filepath.Join(dir, "plugin")
			const uidA, uidB, uidC = "0a0a0a0a-0000-4000-8000-00000000000a", "0b0b0b0b-0000-4000-8000-00000000000b", "0c0c0c0c-0000-4000-8000-00000000000c"
			a := startFakePod(t, dir, regDir, pluginDir, uidA, drapb.DRAPluginService, dhv1.DRAResourceHealthService)
			backdate(t, a.regSocket)
			if hashed := !strings.Contains(a.regSocket, uidA); hashed != tc.hashed {
				t.Fatalf("registration socket %s: hashed %v, want %v", a.regSocket, hashed, tc.hashed)
			}

			cfg := DefaultConfig()
			cfg.DriverRegistrarDir = regDir
			cfg.KubeletRegistrarDir = filepath.Join(dir, "kubelet")
			cfg.DriverWait = 5 * time.Second
			mkdirs(t, cfg.KubeletRegistrarDir)
			ip, err := Start(ctx, cfg, nil)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			t.Cleanup(func() { _ = ip.Close() })
			k := newKubelet(t, cfg.KubeletRegistrarDir)
			if _, err := k.reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
				t.Fatal(err)
			}
			if info := ip.Info(); info.DriverRegistration != a.regSocket || info.DriverEndpoint != a.endpoint || !a.registered() {
				t.Fatalf("Info = %+v, pod A registered %v; want pod A's sockets, registered", info, a.registered())
			}
			if _, err := k.prepare(ctx, "u1"); err != nil || a.prepareCalls("u1") != 1 {
				t.Fatalf("prepare before the update: %v, pod A's calls %d", err, a.prepareCalls("u1"))
			}

			// The rolling update starts pod B beside pod A; B offers no
			// health service.
			b := startFakePod(t, dir, regDir, pluginDir, uidB, drapb.DRAPluginService)
			waitFor(t, "the interposer to follow pod B", func() bool { return ip.Info().DriverEndpoint == b.endpoint })
			// The interposer tells the pod it follows the kubelet's status
			// right after it switched to it.
			waitFor(t, "pod B to be told the kubelet's registration status", b.registered)
			if _, err := k.prepare(ctx, "u2"); err != nil || b.prepareCalls("u2") != 1 || a.prepareCalls("u2") != 0 {
				t.Errorf("prepare during the update: %v, calls pod A %d, pod B %d; want pod B's", err, a.prepareCalls("u2"), b.prepareCalls("u2"))
			}
			if recs := ip.Records(Filter{ClaimUID: "u2"}); len(recs) != 1 || recs[0].DriverEndpoint != b.endpoint {
				t.Errorf("records of u2 %+v, want one naming pod B's endpoint", recs)
			}
			stream, err := k.health.NodeWatchResources(ctx, &dhv1.NodeWatchResourcesRequest{})
			if err == nil {
				_, err = stream.Recv()
			}
			if status.Code(err) != codes.Unimplemented {
				t.Errorf("health stream of pod B: %v, want Unimplemented", err)
			}

			// Pod A goes; then pod B, and pod C comes after a gap.
			a.stop()
			if _, err := k.prepare(ctx, "u3"); err != nil || b.prepareCalls("u3") != 1 {
				t.Errorf("prepare after pod A went: %v, pod B's calls %d", err, b.prepareCalls("u3"))
			}
			b.stop()
			time.Sleep(2 * followInterval)
			c := startFakePod(t, dir, regDir, pluginDir, uidC, drapb.DRAPluginService)
			waitFor(t, "the interposer to follow pod C", func() bool { return ip.Info().DriverEndpoint == c.endpoint })
			waitFor(t, "pod C to be told the kubelet's registration status", c.registered)
			if _, err := k.prepare(ctx, "u4"); err != nil || c.prepareCalls("u4") != 1 {
				t.Errorf("prepare after pod C came: %v, pod C's calls %d", err, c.prepareCalls("u4"))
			}

			// The kubelet's view never changed: one registration, the
			// interposer's endpoint.
			entries, _ := os.ReadDir(cfg.KubeletRegistrarDir)
			info, err := k.reg.GetInfo(ctx, &registerapi.InfoRequest{})
			if len(entries) != 1 || err != nil || info.Endpoint != k.info.Endpoint || info.Name != fakeName {
				t.Errorf("kubelet registrar dir %v, GetInfo %v %v; want the interposer's one registration, unchanged", entries, info, err)
			}
		})
	}
}

// TestFollowsARestartedDriver: a driver with fixed socket names that
// restarts binds them anew; the interposer connects to the new process and
// tells it the kubelet's registration status, which the kubelet, whose
// registration did not change, will not.
func TestFollowsARestartedDriver(t *testing.T) {
	ctx := context.Background()
	f := startFakeDriver(t, registerapi.DRAPlugin, drapb.DRAPluginService)
	backdate(t, f.regSocket)
	ip, registrar := startInterposer(t, f, "", nil)
	k := newKubelet(t, registrar)
	if _, err := k.reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	first := ip.cur.Load()
	f.stop()
	restarted := startFakeInstance(t, f.dir, f.regSocket, f.endpoint, registerapi.DRAPlugin, drapb.DRAPluginService)
	waitFor(t, "the interposer to follow the restarted driver", func() bool { return ip.cur.Load() != first })
	waitFor(t, "the restarted driver to be told the kubelet's registration status", restarted.registered)
	if _, err := k.prepare(ctx, "u1"); err != nil || restarted.prepareCalls("u1") != 1 {
		t.Errorf("prepare after the restart: %v, calls %d", err, restarted.prepareCalls("u1"))
	}
}

// TestFollowErrors: the registrar directory of a driver that is not there,
// of a driver of another kind, and the configuration of where the driver is.
func TestFollowErrors(t *testing.T) {
	dir := shortTempDir(t)
	cfg := Config{DriverRegistrarDir: filepath.Join(dir, "reg"), KubeletRegistrarDir: filepath.Join(dir, "kubelet"), DriverWait: 300 * time.Millisecond}
	mkdirs(t, cfg.DriverRegistrarDir)
	if _, err := Start(context.Background(), cfg, nil); !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "no socket in "+cfg.DriverRegistrarDir) {
		t.Errorf("Start without a driver: %v, want ErrNoDriver saying there is no socket", err)
	}
	startFakeInstance(t, dir, filepath.Join(cfg.DriverRegistrarDir, "x-reg.sock"), filepath.Join(dir, "plugin", "csi.sock"), "CSIPlugin", drapb.DRAPluginService)
	if _, err := Start(context.Background(), cfg, nil); !errors.Is(err, ErrNotDRAPlugin) {
		t.Errorf("Start with a CSI plugin: %v, want ErrNotDRAPlugin", err)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{KubeletRegistrarDir: "/k", DriverWait: time.Second}, "--driver-registration-socket or --driver-registrar-dir: one is required"},
		{Config{DriverRegistrationSocket: "/d/x-reg.sock", DriverRegistrarDir: "/d", KubeletRegistrarDir: "/k", DriverWait: time.Second}, "give one, not both"},
		{Config{DriverRegistrarDir: "d", KubeletRegistrarDir: "/k", DriverWait: time.Second}, `--driver-registrar-dir "d": want an absolute path`},
		{Config{DriverRegistrarDir: "/k/", KubeletRegistrarDir: "/k", DriverWait: time.Second}, `--driver-registrar-dir "/k/": in the kubelet's registration directory`},
	} {
		if err := tc.cfg.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidConfig saying %q", tc.cfg, err, tc.want)
		}
	}
}
