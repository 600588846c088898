package interpose

import (
	"context"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	dhv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	dhv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// The gRPC services the interposer serves to the kubelet: each forwards
// to the driver through the Interposer.

type draV1 struct {
	drapb.UnimplementedDRAPluginServer
	ip *Interposer
}

func (s draV1) NodePrepareResources(ctx context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	return s.ip.prepare(ctx, drapb.DRAPluginService, req)
}

func (s draV1) NodeUnprepareResources(ctx context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	return s.ip.unprepare(ctx, drapb.DRAPluginService, req)
}

type draV1beta1 struct {
	drav1beta1.UnimplementedDRAPluginServer
	ip *Interposer
}

func (s draV1beta1) NodePrepareResources(ctx context.Context, req *drav1beta1.NodePrepareResourcesRequest) (*drav1beta1.NodePrepareResourcesResponse, error) {
	in, err := convert(req, &drapb.NodePrepareResourcesRequest{})
	if err != nil {
		return nil, err
	}
	out, err := s.ip.prepare(ctx, drav1beta1.DRAPluginService, in)
	if err != nil {
		return nil, err
	}
	return convert(out, &drav1beta1.NodePrepareResourcesResponse{})
}

func (s draV1beta1) NodeUnprepareResources(ctx context.Context, req *drav1beta1.NodeUnprepareResourcesRequest) (*drav1beta1.NodeUnprepareResourcesResponse, error) {
	in, err := convert(req, &drapb.NodeUnprepareResourcesRequest{})
	if err != nil {
		return nil, err
	}
	out, err := s.ip.unprepare(ctx, drav1beta1.DRAPluginService, in)
	if err != nil {
		return nil, err
	}
	return convert(out, &drav1beta1.NodeUnprepareResourcesResponse{})
}

type healthV1 struct {
	dhv1.UnimplementedDRAResourceHealthServer
	ip *Interposer
}

func (s healthV1) NodeWatchResources(req *dhv1.NodeWatchResourcesRequest, out grpc.ServerStreamingServer[dhv1.NodeWatchResourcesResponse]) error {
	return forwardHealth(s.ip, dhv1.DRAResourceHealthService, func(ctx context.Context, d *DriverClient) (grpc.ServerStreamingClient[dhv1.NodeWatchResourcesResponse], error) {
		return d.watchHealthV1(ctx, req)
	}, out)
}

type healthV1alpha1 struct {
	dhv1alpha1.UnimplementedDRAResourceHealthServer
	ip *Interposer
}

func (s healthV1alpha1) NodeWatchResources(req *dhv1alpha1.NodeWatchResourcesRequest, out grpc.ServerStreamingServer[dhv1alpha1.NodeWatchResourcesResponse]) error {
	return forwardHealth(s.ip, dhv1alpha1.DRAResourceHealthService, func(ctx context.Context, d *DriverClient) (grpc.ServerStreamingClient[dhv1alpha1.NodeWatchResourcesResponse], error) {
		return d.watchHealthV1alpha1(ctx, req)
	}, out)
}

// registerDRA registers on s the services the driver offers.
func (ip *Interposer) registerDRA(s *grpc.Server) {
	for _, service := range ip.services {
		switch service {
		case drapb.DRAPluginService:
			drapb.RegisterDRAPluginServer(s, draV1{ip: ip})
		case drav1beta1.DRAPluginService:
			drav1beta1.RegisterDRAPluginServer(s, draV1beta1{ip: ip})
		case dhv1.DRAResourceHealthService:
			dhv1.RegisterDRAResourceHealthServer(s, healthV1{ip: ip})
		case dhv1alpha1.DRAResourceHealthService:
			dhv1alpha1.RegisterDRAResourceHealthServer(s, healthV1alpha1{ip: ip})
		}
	}
}

// registration is the interposer's registration service in the kubelet's
// registration directory: the driver's name and versions, the
// interposer's endpoint; the kubelet's verdict is passed on to the driver.
type registration struct {
	registerapi.UnimplementedRegistrationServer
	ip *Interposer
}

func (s registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.DRAPlugin,
		Name:              s.ip.name,
		Endpoint:          s.ip.endpoint,
		SupportedVersions: s.ip.services,
	}, nil
}

// NotifyRegistrationStatus passes the kubelet's verdict on to the driver
// instance followed now; the follower passes it on to the instances it
// follows later.
func (s registration) NotifyRegistrationStatus(ctx context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	logger := klog.FromContext(ctx)
	logger.Info("Kubelet registration status", "registered", st.GetPluginRegistered(), "error", st.GetError())
	s.ip.registered.Store(st.GetPluginRegistered())
	s.ip.lastStatus.Store(st)
	if _, err := s.ip.cur.Load().reg.NotifyRegistrationStatus(ctx, st); err != nil {
		logger.Error(err, "Pass the registration status on to the driver")
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
