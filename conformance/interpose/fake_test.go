package interpose

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	dhv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// fakeDriver is a DRA driver on temp unix sockets: registration and DRA
// (v1 or v1beta1, health v1) services. It prepares every claim as one
// device "dev-<uid>" with CDI ID "fake.drakit.dev/dev=<uid>", except a
// claim whose UID is "bad", which gets a per-claim error; a call with a
// claim "grpc-error" fails as a whole (v1).
type fakeDriver struct {
	dir, regSocket, endpoint string
	pluginType               string
	versions                 []string
	// servers are the registration and DRA servers, which stop stops.
	servers []*grpc.Server

	mu       sync.Mutex
	prepared map[string]int // prepare calls per claim UID
	statuses []*registerapi.RegistrationStatus
}

const fakeName = "fake.drakit.dev"

// startFakeDriver serves a fake driver of the given plugin type and
// versions in a temp directory.
func startFakeDriver(t *testing.T, pluginType string, versions ...string) *fakeDriver {
	t.Helper()
	dir := shortTempDir(t)
	return startFakeInstance(t, dir, filepath.Join(dir, "reg", fakeName+"-reg.sock"), filepath.Join(dir, "plugin", "dra.sock"), pluginType, versions...)
}

// startFakeInstance serves a fake driver on the given registration socket
// and endpoint (one pod of a driver, when the names are per pod); dir is
// the test's directory. The servers stop (and remove their sockets) with
// stop, or at the end of the test.
func startFakeInstance(t *testing.T, dir, regSocket, endpoint, pluginType string, versions ...string) *fakeDriver {
	t.Helper()
	f := &fakeDriver{dir: dir, regSocket: regSocket, endpoint: endpoint, pluginType: pluginType, versions: versions, prepared: map[string]int{}}
	mkdirs(t, filepath.Dir(f.regSocket), filepath.Dir(f.endpoint))
	dra := grpc.NewServer()
	drapb.RegisterDRAPluginServer(dra, fakeV1{f: f})
	drav1beta1.RegisterDRAPluginServer(dra, fakeV1beta1{f: f})
	dhv1.RegisterDRAResourceHealthServer(dra, fakeHealth{})
	serve(t, dra, f.endpoint)
	reg := grpc.NewServer()
	registerapi.RegisterRegistrationServer(reg, fakeRegistration{f: f})
	serve(t, reg, f.regSocket)
	f.servers = []*grpc.Server{reg, dra}
	return f
}

// stop stops the driver as a pod that shuts down cleanly does: it stops
// serving and its sockets go.
func (f *fakeDriver) stop() {
	for _, s := range f.servers {
		s.Stop()
	}
}

func serve(t *testing.T, s *grpc.Server, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
}

// registered reports whether the driver was told its registration
// succeeded.
func (f *fakeDriver) registered() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.statuses) > 0 && f.statuses[len(f.statuses)-1].PluginRegistered
}

func (f *fakeDriver) prepareCalls(uid string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.prepared[uid]
}

func (f *fakeDriver) prepare(req *drapb.NodePrepareResourcesRequest) *drapb.NodePrepareResourcesResponse {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	for _, c := range req.GetClaims() {
		f.prepared[c.GetUid()]++
		if c.GetUid() == "bad" {
			resp.Claims[c.GetUid()] = &drapb.NodePrepareResourceResponse{Error: "claim bad not allocated"}
			continue
		}
		resp.Claims[c.GetUid()] = &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{{
			RequestNames: []string{"req"}, PoolName: "node", DeviceName: "dev-" + c.GetUid(), CdiDeviceIds: []string{"fake.drakit.dev/dev=" + c.GetUid()},
		}}}
	}
	return resp
}

func unprepared(req *drapb.NodeUnprepareResourcesRequest) *drapb.NodeUnprepareResourcesResponse {
	resp := &drapb.NodeUnprepareResourcesResponse{Claims: map[string]*drapb.NodeUnprepareResourceResponse{}}
	for _, c := range req.GetClaims() {
		resp.Claims[c.GetUid()] = &drapb.NodeUnprepareResourceResponse{}
	}
	return resp
}

type fakeV1 struct {
	drapb.UnimplementedDRAPluginServer
	f *fakeDriver
}

func (s fakeV1) NodePrepareResources(_ context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	if claimIndex(req.GetClaims(), "grpc-error") >= 0 {
		return nil, status.Error(codes.FailedPrecondition, "claim grpc-error not allocated")
	}
	return s.f.prepare(req), nil
}

func (s fakeV1) NodeUnprepareResources(_ context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	return unprepared(req), nil
}

type fakeV1beta1 struct {
	drav1beta1.UnimplementedDRAPluginServer
	f *fakeDriver
}

func (s fakeV1beta1) NodePrepareResources(_ context.Context, req *drav1beta1.NodePrepareResourcesRequest) (*drav1beta1.NodePrepareResourcesResponse, error) {
	in, err := convert(req, &drapb.NodePrepareResourcesRequest{})
	if err != nil {
		return nil, err
	}
	return convert(s.f.prepare(in), &drav1beta1.NodePrepareResourcesResponse{})
}

type fakeHealth struct {
	dhv1.UnimplementedDRAResourceHealthServer
}

func (fakeHealth) NodeWatchResources(_ *dhv1.NodeWatchResourcesRequest, out grpc.ServerStreamingServer[dhv1.NodeWatchResourcesResponse]) error {
	for _, h := range []dhv1.HealthStatus{dhv1.HealthStatus_HEALTHY, dhv1.HealthStatus_UNHEALTHY} {
		if err := out.Send(&dhv1.NodeWatchResourcesResponse{Devices: []*dhv1.DeviceHealth{{
			Device: &dhv1.DeviceIdentifier{PoolName: "node", DeviceName: "dev-0"}, Health: h, LastUpdatedTime: time.Now().Unix()}}}); err != nil {
			return err
		}
	}
	return nil
}

type fakeRegistration struct {
	registerapi.UnimplementedRegistrationServer
	f *fakeDriver
}

func (s fakeRegistration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: s.f.pluginType, Name: fakeName, Endpoint: s.f.endpoint, SupportedVersions: s.f.versions}, nil
}

func (s fakeRegistration) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.statuses = append(s.f.statuses, st)
	return &registerapi.RegistrationStatusResponse{}, nil
}

// kubelet is the kubelet's side of an interposer: it finds the plugin in
// its registration directory as the plugin watcher does and calls it.
type kubelet struct {
	info   *registerapi.PluginInfo
	reg    registerapi.RegistrationClient
	conn   *grpc.ClientConn
	v1     drapb.DRAPluginClient
	beta   drav1beta1.DRAPluginClient
	health dhv1.DRAResourceHealthClient
}

func newKubelet(t *testing.T, registrarDir string) *kubelet {
	t.Helper()
	regConn := dial(t, filepath.Join(registrarDir, fakeName+"-reg.sock"))
	k := &kubelet{reg: registerapi.NewRegistrationClient(regConn)}
	info, err := k.reg.GetInfo(context.Background(), &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("kubelet: GetInfo: %v", err)
	}
	k.info = info
	k.conn = dial(t, info.Endpoint)
	k.v1, k.beta, k.health = drapb.NewDRAPluginClient(k.conn), drav1beta1.NewDRAPluginClient(k.conn), dhv1.NewDRAResourceHealthClient(k.conn)
	return k
}

func dial(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func (k *kubelet) prepare(ctx context.Context, uids ...string) (*drapb.NodePrepareResourcesResponse, error) {
	req := &drapb.NodePrepareResourcesRequest{}
	for _, uid := range uids {
		req.Claims = append(req.Claims, &drapb.Claim{Namespace: "ns", Name: "claim-" + uid, Uid: uid})
	}
	return k.v1.NodePrepareResources(ctx, req)
}

// startInterposer interposes on f with a kubelet registration directory
// of its own; control is the control address ("" for none).
func startInterposer(t *testing.T, f *fakeDriver, control string, hooks Hooks) (*Interposer, string) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DriverRegistrationSocket = f.regSocket
	cfg.KubeletRegistrarDir = filepath.Join(f.dir, "kubelet")
	cfg.Records = filepath.Join(f.dir, "records.jsonl")
	cfg.Control = control
	cfg.DriverWait = 5 * time.Second
	mkdirs(t, cfg.KubeletRegistrarDir)
	ip, err := Start(context.Background(), cfg, hooks)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = ip.Close() })
	return ip, cfg.KubeletRegistrarDir
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// shortTempDir is a temp directory with a short path: test names make
// t.TempDir's too long for the sockets below it (AF_UNIX, 107 bytes).
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "interpose")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
