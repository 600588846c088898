package kubeletapi

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// preparingDRA answers every claim of a prepare with one CDI device named
// after its UID, and every claim of an unprepare with success; a claim
// named "bad" gets an error, a claim named "down" fails the whole call.
type preparingDRA struct {
	drapb.UnimplementedDRAPluginServer
}

func (preparingDRA) NodePrepareResources(_ context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	out := map[string]*drapb.NodePrepareResourceResponse{}
	for _, c := range req.Claims {
		switch c.Name {
		case "down":
			return nil, status.Error(codes.Unavailable, "down")
		case "bad":
			out[c.Uid] = &drapb.NodePrepareResourceResponse{Error: "cannot"}
		default:
			out[c.Uid] = &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{{PoolName: "p", DeviceName: "d", CdiDeviceIds: []string{"v.example/c=" + c.Uid}}}}
		}
	}
	return &drapb.NodePrepareResourcesResponse{Claims: out}, nil
}

func (preparingDRA) NodeUnprepareResources(_ context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	out := map[string]*drapb.NodeUnprepareResourceResponse{}
	for _, c := range req.Claims {
		out[c.Uid] = &drapb.NodeUnprepareResourceResponse{}
	}
	return &drapb.NodeUnprepareResourcesResponse{Claims: out}, nil
}

func TestPrepareAndUnprepare(t *testing.T) {
	endpoint := filepath.Join(shortTempDir(t), "dra.sock")
	serve(t, endpoint, func(s *grpc.Server) { drapb.RegisterDRAPluginServer(s, preparingDRA{}) })
	ctx := context.Background()
	got, err := Prepare(ctx, endpoint, 2*time.Second, &drapb.Claim{Namespace: "ns", Name: "a", Uid: "uid-a"}, &drapb.Claim{Namespace: "ns", Name: "bad", Uid: "uid-b"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := got["uid-a"].GetDevices()[0].GetCdiDeviceIds(); len(ids) != 1 || ids[0] != "v.example/c=uid-a" {
		t.Errorf("claim a: CDI devices %v", ids)
	}
	if got["uid-b"].GetError() != "cannot" {
		t.Errorf("claim bad: %v, want its error", got["uid-b"])
	}
	if _, err := Prepare(ctx, endpoint, 2*time.Second, &drapb.Claim{Name: "down", Uid: "uid-c"}); status.Code(errorsCause(err)) != codes.Unavailable || !strings.Contains(err.Error(), endpoint) {
		t.Errorf("Prepare of a failing call = %v, want Unavailable naming the endpoint", err)
	}
	un, err := Unprepare(ctx, endpoint, 2*time.Second, &drapb.Claim{Namespace: "ns", Name: "a", Uid: "uid-a"})
	if _, ok := un["uid-a"]; err != nil || !ok || len(un) != 1 {
		t.Errorf("Unprepare = %v, %v; want an answer for uid-a alone", un, err)
	}
}
