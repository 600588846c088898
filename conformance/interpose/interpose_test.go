package interpose

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
	dhv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func TestForwardsAndRecords(t *testing.T) {
	ctx := context.Background()
	f := startFakeDriver(t, registerapi.DRAPlugin, drapb.DRAPluginService, dhv1.DRAResourceHealthService)
	ip, registrar := startInterposer(t, f, "", nil)
	k := newKubelet(t, registrar)

	if k.info.Name != fakeName || k.info.Endpoint != filepath.Join(filepath.Dir(f.endpoint), "interpose.sock") ||
		!slices.Equal(k.info.SupportedVersions, []string{drapb.DRAPluginService, dhv1.DRAResourceHealthService}) {
		t.Errorf("GetInfo = %v, want the driver's name and versions with the interposer's endpoint", k.info)
	}
	if _, err := k.reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	if len(f.statuses) != 1 || !f.statuses[0].PluginRegistered || !ip.Info().Registered {
		t.Errorf("registration status: driver got %v, interposer says registered=%v", f.statuses, ip.Info().Registered)
	}

	resp, err := k.prepare(ctx, "u1", "bad")
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Claims["u1"].GetDevices()[0].GetCdiDeviceIds(); !slices.Equal(got, []string{"fake.drakit.dev/dev=u1"}) || resp.Claims["bad"].GetError() == "" {
		t.Errorf("prepare answer = %v, want the driver's", resp)
	}
	if _, err := k.v1.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{{Uid: "u1", Namespace: "ns", Name: "claim-u1"}}}); err != nil {
		t.Fatal(err)
	}
	recs := ip.Records(Filter{Method: MethodPrepare})
	if len(recs) != 1 {
		t.Fatalf("prepare records = %v, want 1", recs)
	}
	r := recs[0]
	good, _ := r.Claim("u1")
	bad, _ := r.Claim("bad")
	if r.Service != drapb.DRAPluginService || r.Source != SourceKubelet || !r.OK() || r.DriverCode != "OK" || r.Duration <= 0 ||
		good.Name != "claim-u1" || !good.Answered || !slices.Equal(good.CDIDeviceIDs(), []string{"fake.drakit.dev/dev=u1"}) ||
		good.Devices[0].Device != "dev-u1" || bad.Error != "claim bad not allocated" {
		t.Errorf("prepare record = %+v", r)
	}
	if got := ip.Records(Filter{ClaimUID: "u1"}); len(got) != 2 || got[1].Method != MethodUnprepare {
		t.Errorf("records of claim u1 = %v, want the prepare and the unprepare", got)
	}
	if got := ip.Records(Filter{After: r.Seq}); len(got) != 1 {
		t.Errorf("records after %d = %v, want the unprepare", r.Seq, got)
	}

	stream, err := k.health.NodeWatchResources(ctx, &dhv1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var healths []dhv1.HealthStatus
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		healths = append(healths, msg.Devices[0].Health)
	}
	if !slices.Equal(healths, []dhv1.HealthStatus{dhv1.HealthStatus_HEALTHY, dhv1.HealthStatus_UNHEALTHY}) {
		t.Errorf("health stream = %v, want the driver's two reports", healths)
	}

	// Every record is a JSON line of the records file.
	if err := ip.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(filepath.Join(f.dir, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	lines := 0
	for s := bufio.NewScanner(file); s.Scan(); lines++ {
		if !strings.Contains(s.Text(), `"method":"`) {
			t.Errorf("record line %q", s.Text())
		}
	}
	if lines != 3 {
		t.Errorf("records file has %d lines, want 3 (prepare, unprepare, health stream)", lines)
	}
	for _, s := range []string{k.info.Endpoint, filepath.Join(registrar, fakeName+"-reg.sock")} {
		if _, err := os.Stat(s); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket %s after Close: %v, want it removed", s, err)
		}
	}
}

func TestForwardsTheDriversError(t *testing.T) {
	f := startFakeDriver(t, registerapi.DRAPlugin, drapb.DRAPluginService)
	ip, registrar := startInterposer(t, f, "", nil)
	_, err := newKubelet(t, registrar).prepare(context.Background(), "u1", "grpc-error")
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "claim grpc-error not allocated") {
		t.Errorf("prepare: %v, want the driver's FailedPrecondition", err)
	}
	if recs := ip.Records(Filter{}); len(recs) != 1 || recs[0].Code != "FailedPrecondition" || recs[0].DriverCode != "FailedPrecondition" || recs[0].Claims[0].Answered {
		t.Errorf("records %+v, want the driver's status and no answer", recs)
	}
}

func TestForwardsV1beta1(t *testing.T) {
	f := startFakeDriver(t, registerapi.DRAPlugin, drav1beta1.DRAPluginService)
	_, registrar := startInterposer(t, f, "", nil)
	k := newKubelet(t, registrar)
	if !slices.Equal(k.info.SupportedVersions, []string{drav1beta1.DRAPluginService}) {
		t.Errorf("versions = %v, want only v1beta1", k.info.SupportedVersions)
	}
	resp, err := k.beta.NodePrepareResources(context.Background(), &drav1beta1.NodePrepareResourcesRequest{Claims: []*drav1beta1.Claim{{Uid: "u1", Namespace: "ns", Name: "c"}}})
	if err != nil || resp.Claims["u1"].GetDevices()[0].GetDeviceName() != "dev-u1" {
		t.Errorf("v1beta1 prepare = %v, %v", resp, err)
	}
	if _, err := k.prepare(context.Background(), "u1"); status.Code(err) != codes.Unimplemented {
		t.Errorf("v1 prepare of a v1beta1 driver: %v, want Unimplemented", err)
	}
}

func TestFaults(t *testing.T) {
	hookCalls := 0
	hooks := Hooks{"restart": func(context.Context) error { hookCalls++; return nil }}
	for _, tc := range []struct {
		name   string
		rule   Rule
		claims []string
		check  func(t *testing.T, f *fakeDriver, resp *drapb.NodePrepareResourcesResponse, err error, rec Record)
	}{
		{"error before keeps the call from the driver", Rule{Method: MethodPrepare, Point: PointBefore, Error: &StatusError{Code: "Unavailable", Message: "injected"}}, []string{"u1"},
			func(t *testing.T, f *fakeDriver, _ *drapb.NodePrepareResourcesResponse, err error, rec Record) {
				if status.Code(err) != codes.Unavailable || f.prepareCalls("u1") != 0 || rec.DriverCode != "" || rec.Code != "Unavailable" {
					t.Errorf("err %v, driver calls %d, record %+v", err, f.prepareCalls("u1"), rec)
				}
			}},
		{"error after the driver prepared", Rule{Method: MethodPrepare, Point: PointAfter, Error: &StatusError{Code: "DeadlineExceeded"}}, []string{"u1"},
			func(t *testing.T, f *fakeDriver, _ *drapb.NodePrepareResourcesResponse, err error, rec Record) {
				c, _ := rec.Claim("u1")
				if status.Code(err) != codes.DeadlineExceeded || f.prepareCalls("u1") != 1 || rec.DriverCode != "OK" || len(c.CDIDeviceIDs()) != 1 {
					t.Errorf("err %v, driver calls %d, record %+v", err, f.prepareCalls("u1"), rec)
				}
			}},
		{"delay", Rule{Method: MethodPrepare, Point: PointBefore, Delay: "300ms"}, []string{"u1"},
			func(t *testing.T, _ *fakeDriver, _ *drapb.NodePrepareResourcesResponse, err error, rec Record) {
				if err != nil || rec.Duration < 300*time.Millisecond || rec.DriverDuration >= 300*time.Millisecond {
					t.Errorf("err %v, record %+v, want it 300ms late", err, rec)
				}
			}},
		{"drop after the driver prepared", Rule{Method: MethodPrepare, Point: PointAfter, Drop: true}, []string{"u1"},
			func(t *testing.T, f *fakeDriver, _ *drapb.NodePrepareResourcesResponse, err error, rec Record) {
				if status.Code(err) != codes.Unavailable || !rec.Dropped || f.prepareCalls("u1") != 1 {
					t.Errorf("err %v, record %+v, want the connection dropped after the driver's prepare", err, rec)
				}
			}},
		{"claim error for the named claim only", Rule{Method: MethodPrepare, Point: PointAfter, Claim: "ns/claim-u2", ClaimError: "injected per-claim"}, []string{"u1", "u2"},
			func(t *testing.T, _ *fakeDriver, resp *drapb.NodePrepareResourcesResponse, err error, rec Record) {
				c2, _ := rec.Claim("u2")
				if err != nil || resp.Claims["u2"].GetError() != "injected per-claim" || len(resp.Claims["u2"].GetDevices()) != 0 ||
					resp.Claims["u1"].GetError() != "" || len(resp.Claims["u1"].GetDevices()) != 1 || c2.InjectedError == "" || len(c2.Devices) != 1 {
					t.Errorf("err %v, answer %v, record %+v", err, resp, rec)
				}
			}},
		{"a rule for another claim does not fire", Rule{Method: MethodPrepare, Point: PointBefore, Claim: "other", Error: &StatusError{Code: "Internal"}}, []string{"u1"},
			func(t *testing.T, _ *fakeDriver, _ *drapb.NodePrepareResourcesResponse, err error, rec Record) {
				if err != nil || len(rec.Faults) != 0 {
					t.Errorf("err %v, faults %v, want none", err, rec.Faults)
				}
			}},
		{"exec", Rule{Method: MethodPrepare, Point: PointBefore, Exec: []string{"sh", "-c", "echo ran > \"$0\"", "OUT"}}, []string{"u1"},
			func(t *testing.T, f *fakeDriver, _ *drapb.NodePrepareResourcesResponse, err error, rec Record) {
				if data, rerr := os.ReadFile(filepath.Join(f.dir, "exec.out")); err != nil || string(data) != "ran\n" {
					t.Errorf("err %v, command output file %q (%v)", err, data, rerr)
				}
			}},
		{"hook", Rule{Method: MethodPrepare, Point: PointAfter, Hook: "restart"}, []string{"u1"},
			func(t *testing.T, _ *fakeDriver, _ *drapb.NodePrepareResourcesResponse, err error, rec Record) {
				if err != nil || hookCalls != 1 || !slices.Equal(rec.Faults, []string{"hook restart after NodePrepareResources"}) {
					t.Errorf("err %v, hook calls %d, faults %v", err, hookCalls, rec.Faults)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFakeDriver(t, registerapi.DRAPlugin, drapb.DRAPluginService)
			ip, registrar := startInterposer(t, f, "", hooks)
			k := newKubelet(t, registrar)
			rule := tc.rule
			if rule.Exec != nil {
				rule.Exec = slices.Replace(slices.Clone(rule.Exec), 3, 4, filepath.Join(f.dir, "exec.out"))
			}
			rule.Times = 1
			if _, err := ip.AddRule(rule); err != nil {
				t.Fatal(err)
			}
			resp, err := k.prepare(context.Background(), tc.claims...)
			recs := ip.Records(Filter{Method: MethodPrepare})
			if len(recs) != 1 {
				t.Fatalf("records %v, want 1", recs)
			}
			tc.check(t, f, resp, err, recs[0])
			// Times 1: the next call is left alone (over a new connection
			// when the fault dropped the old one).
			if _, err := newKubelet(t, registrar).prepare(context.Background(), tc.claims...); err != nil {
				t.Errorf("second prepare: %v, want no fault", err)
			}
			if got := ip.Records(Filter{Method: MethodPrepare}); len(got[1].Faults) != 0 || len(recs[0].Faults) == 1 && len(ip.Rules()) != 0 {
				t.Errorf("second call faults %v, rules left %v", got[1].Faults, ip.Rules())
			}
		})
	}
}

func TestRulesFiles(t *testing.T) {
	invalid := map[string]string{
		"invalid-unknown-field.yaml":      "rules[0].dealy: Forbidden: unknown field",
		"invalid-two-actions.yaml":        "want exactly one action",
		"invalid-no-action.yaml":          "rules[0]: Required value",
		"invalid-method.yaml":             "rules[0].method: Unsupported value",
		"invalid-code.yaml":               "rules[0].error.code: Unsupported value",
		"invalid-delay.yaml":              "rules[0].delay: Invalid value",
		"invalid-claim-error-before.yaml": "needs point after",
		"invalid-kind.yaml":               "kind: Unsupported value",
		"invalid-times.yaml":              "rules[0].times: Invalid value",
	}
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata: %v %v", files, err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		rules, err := LoadRules(file)
		switch {
		case strings.HasPrefix(name, "valid-"):
			if err != nil || len(rules) == 0 {
				t.Errorf("%s: %v (%d rules), want valid", name, err, len(rules))
			}
		case invalid[name] == "":
			t.Errorf("%s: no expected error in the test's table", name)
		case !errors.Is(err, ErrInvalidRules) || !strings.Contains(err.Error(), invalid[name]):
			t.Errorf("%s: %v, want ErrInvalidRules naming %q", name, err, invalid[name])
		}
		delete(invalid, name)
	}
	for name := range invalid {
		t.Errorf("%s: missing from testdata", name)
	}
}

func TestStartErrors(t *testing.T) {
	t.Run("no driver socket", func(t *testing.T) {
		dir := shortTempDir(t)
		cfg := Config{DriverRegistrationSocket: filepath.Join(dir, "x-reg.sock"), KubeletRegistrarDir: filepath.Join(dir, "kubelet"), DriverWait: 300 * time.Millisecond}
		if _, err := Start(context.Background(), cfg, nil); !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "not found") {
			t.Errorf("Start: %v, want ErrNoDriver saying not found", err)
		}
	})
	t.Run("not a DRA plugin", func(t *testing.T) {
		f := startFakeDriver(t, "CSIPlugin", drapb.DRAPluginService)
		cfg := Config{DriverRegistrationSocket: f.regSocket, KubeletRegistrarDir: filepath.Join(f.dir, "kubelet"), DriverWait: time.Second}
		if _, err := Start(context.Background(), cfg, nil); !errors.Is(err, ErrNotDRAPlugin) || !strings.Contains(err.Error(), `type "CSIPlugin"`) {
			t.Errorf("Start: %v, want ErrNotDRAPlugin naming the type", err)
		}
	})
	t.Run("registration socket served by another process", func(t *testing.T) {
		f := startFakeDriver(t, registerapi.DRAPlugin, drapb.DRAPluginService)
		kubeletDir := filepath.Join(f.dir, "kubelet")
		mkdirs(t, kubeletDir)
		l, err := net.Listen("unix", filepath.Join(kubeletDir, fakeName+"-reg.sock"))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }()
		cfg := Config{DriverRegistrationSocket: f.regSocket, KubeletRegistrarDir: kubeletDir, DriverWait: time.Second}
		if _, err := Start(context.Background(), cfg, nil); !errors.Is(err, ErrSocketInUse) {
			t.Errorf("Start: %v, want ErrSocketInUse", err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(f.endpoint), "interpose.sock")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("endpoint after a failed start: %v, want it removed", err)
		}
	})
}

func TestDropClosesTheKubeletsConnection(t *testing.T) {
	f := startFakeDriver(t, registerapi.DRAPlugin, drapb.DRAPluginService)
	ip, registrar := startInterposer(t, f, "", nil)
	k := newKubelet(t, registrar)
	if _, err := k.prepare(context.Background(), "u1"); err != nil {
		t.Fatal(err)
	}
	if k.conn.GetState() != connectivity.Ready {
		t.Fatalf("connection %s before the fault, want READY", k.conn.GetState())
	}
	if _, err := ip.AddRule(Rule{Method: MethodPrepare, Point: PointAfter, Drop: true, Times: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.prepare(context.Background(), "u1"); status.Code(err) != codes.Unavailable {
		t.Errorf("prepare: %v, want Unavailable", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for k.conn.GetState() == connectivity.Ready && k.conn.WaitForStateChange(ctx, connectivity.Ready) {
	}
	if k.conn.GetState() == connectivity.Ready {
		t.Errorf("the kubelet's connection is still READY after the drop")
	}
}
