package kubeletapi

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

type fakeRegistration struct {
	registerapi.UnimplementedRegistrationServer
	info *registerapi.PluginInfo
}

func (f fakeRegistration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return f.info, nil
}

type fakeDRA struct {
	drapb.UnimplementedDRAPluginServer
	answer map[string]*drapb.NodeUnprepareResourceResponse
}

func (f fakeDRA) NodeUnprepareResources(context.Context, *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	return &drapb.NodeUnprepareResourcesResponse{Claims: f.answer}, nil
}

type fakePodResources struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	pods []*podresourcesv1.PodResources
}

func (f fakePodResources) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return &podresourcesv1.ListPodResourcesResponse{PodResources: f.pods}, nil
}

func (f fakePodResources) Get(_ context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	for _, p := range f.pods {
		if p.Name == req.PodName && p.Namespace == req.PodNamespace {
			return &podresourcesv1.GetPodResourcesResponse{PodResources: p}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "pod %s/%s not found", req.PodNamespace, req.PodName)
}

// shortTempDir keeps socket paths below the 108-byte AF_UNIX limit.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func serve(t *testing.T, path string, register func(*grpc.Server)) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
}

func TestRegistrations(t *testing.T) {
	dir := shortTempDir(t)
	reg := filepath.Join(dir, "plugins_registry")
	endpoint := filepath.Join(dir, "plugins", "fake", "dra.sock")
	info := &registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: "fake.drakit.dev", Endpoint: endpoint, SupportedVersions: []string{drapb.DRAPluginService}}
	serve(t, filepath.Join(reg, "fake.drakit.dev-reg.sock"), func(s *grpc.Server) { registerapi.RegisterRegistrationServer(s, fakeRegistration{info: info}) })
	serve(t, filepath.Join(reg, "nested", "csi-reg.sock"), func(s *grpc.Server) {
		registerapi.RegisterRegistrationServer(s, fakeRegistration{info: &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "csi"}})
	})
	// A stale socket file: its plugin is gone.
	stale := filepath.Join(reg, "gone-reg.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if err := os.WriteFile(filepath.Join(reg, "not-a-socket"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	serve(t, endpoint, func(s *grpc.Server) { drapb.RegisterDRAPluginServer(s, fakeDRA{}) })

	got, err := Registrations(context.Background(), reg, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d registrations, want 3 sockets: %+v", len(got), got)
	}
	byBase := map[string]Registration{}
	for _, r := range got {
		byBase[filepath.Base(r.Socket)] = r
	}
	if r := byBase["fake.drakit.dev-reg.sock"]; r.Err != nil || r.Info.GetName() != "fake.drakit.dev" || r.Info.GetEndpoint() != endpoint {
		t.Errorf("driver socket: %+v", r)
	}
	if r := byBase["csi-reg.sock"]; r.Err != nil || r.Info.GetType() != registerapi.CSIPlugin {
		t.Errorf("nested socket: %+v", r)
	}
	if r := byBase["gone-reg.sock"]; r.Err == nil {
		t.Errorf("stale socket answered: %+v", r)
	}
	if err := ServesDRAPlugin(context.Background(), endpoint, 2*time.Second); err != nil {
		t.Errorf("ServesDRAPlugin: %v", err)
	}
	if err := ServesDRAPlugin(context.Background(), filepath.Join(reg, "not-a-socket"), time.Second); err == nil || !strings.Contains(err.Error(), "not a unix socket") {
		t.Errorf("ServesDRAPlugin of a plain file: %v", err)
	}
	// The registration socket serves no DRAPlugin: Unimplemented.
	if err := ServesDRAPlugin(context.Background(), byBase["fake.drakit.dev-reg.sock"].Socket, 2*time.Second); status.Code(errorsCause(err)) != codes.Unimplemented {
		t.Errorf("ServesDRAPlugin of a registration socket: %v, want Unimplemented", err)
	}
}

// errorsCause unwraps to the gRPC status error.
func errorsCause(err error) error {
	for err != nil {
		if _, ok := status.FromError(err); ok {
			return err
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
	return nil
}

func TestServesDRAPluginRejectsClaimsInAnswer(t *testing.T) {
	endpoint := filepath.Join(shortTempDir(t), "dra.sock")
	serve(t, endpoint, func(s *grpc.Server) {
		drapb.RegisterDRAPluginServer(s, fakeDRA{answer: map[string]*drapb.NodeUnprepareResourceResponse{"x": {}}})
	})
	if err := ServesDRAPlugin(context.Background(), endpoint, 2*time.Second); err == nil || !strings.Contains(err.Error(), "with 1 claims") {
		t.Errorf("ServesDRAPlugin = %v, want an error about the claim it named", err)
	}
}

func TestServiceName(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.DRAPlugin": true, "v1beta1.DRAPlugin": true, "v1alpha1.DRAResourceHealth": true,
		"1.0.0": false, "": false, "v1": false, "DRAPlugin": false, "v1.draPlugin": false, "v1.DRAPlugin ": false,
	} {
		if got := ServiceName(v); got != want {
			t.Errorf("ServiceName(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestPodResources(t *testing.T) {
	socket := filepath.Join(shortTempDir(t), "pod-resources", "kubelet.sock")
	pod := &podresourcesv1.PodResources{Name: "p", Namespace: "ns", Containers: []*podresourcesv1.ContainerResources{{Name: "c",
		DynamicResources: []*podresourcesv1.DynamicResource{{ClaimName: "claim", ClaimNamespace: "ns",
			ClaimResources: []*podresourcesv1.ClaimResource{{DriverName: "d", PoolName: "pool", DeviceName: "dev", CdiDevices: []*podresourcesv1.CDIDevice{{Name: "v/c=x"}}}}}}}}}
	serve(t, socket, func(s *grpc.Server) {
		podresourcesv1.RegisterPodResourcesListerServer(s, fakePodResources{pods: []*podresourcesv1.PodResources{pod}})
	})
	c, err := NewPodResources(socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	list, err := c.List(context.Background())
	if err != nil || len(list) != 1 || list[0].GetContainers()[0].GetDynamicResources()[0].GetClaimResources()[0].GetCdiDevices()[0].GetName() != "v/c=x" {
		t.Fatalf("List = %v, %v", list, err)
	}
	got, err := c.Get(context.Background(), "ns", "p")
	if err != nil || got.GetName() != "p" {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if _, err := c.Get(context.Background(), "ns", "missing"); status.Code(errorsCause(err)) != codes.NotFound {
		t.Errorf("Get of a missing pod: %v, want NotFound", err)
	}
}
