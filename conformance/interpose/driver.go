package interpose

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	dhv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	dhv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
)

// knownServices are the services the interposer can serve, in the
// kubelet's order of preference per kind.
var knownServices = []string{drapb.DRAPluginService, drav1beta1.DRAPluginService, dhv1.DRAResourceHealthService, dhv1alpha1.DRAResourceHealthService}

// DriverClient calls the driver's DRA services on its own socket, with the
// newest DRAPlugin version it offers (v1, else v1beta1, whose messages are
// wire-compatible with v1's and converted through their encoding).
type DriverClient struct {
	endpoint       string
	conn           *grpc.ClientConn
	services       []string
	v1             drapb.DRAPluginClient
	v1beta1        drav1beta1.DRAPluginClient
	healthV1       dhv1.DRAResourceHealthClient
	healthV1alpha1 dhv1alpha1.DRAResourceHealthClient
}

// NewDriverClient connects (lazily, reconnecting after a driver restart)
// to the driver's DRA socket, offering services (its supported versions
// from registration).
func NewDriverClient(endpoint string, services []string) (*DriverClient, error) {
	if !slices.Contains(services, drapb.DRAPluginService) && !slices.Contains(services, drav1beta1.DRAPluginService) {
		return nil, fmt.Errorf("driver endpoint %s: offers %v, neither %s nor %s", endpoint, services, drapb.DRAPluginService, drav1beta1.DRAPluginService)
	}
	conn, err := grpc.NewClient("unix://"+endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect to driver endpoint %s: %w", endpoint, err)
	}
	d := &DriverClient{endpoint: endpoint, conn: conn, services: services}
	if slices.Contains(services, drapb.DRAPluginService) {
		d.v1 = drapb.NewDRAPluginClient(conn)
	} else {
		d.v1beta1 = drav1beta1.NewDRAPluginClient(conn)
	}
	if slices.Contains(services, dhv1.DRAResourceHealthService) {
		d.healthV1 = dhv1.NewDRAResourceHealthClient(conn)
	}
	if slices.Contains(services, dhv1alpha1.DRAResourceHealthService) {
		d.healthV1alpha1 = dhv1alpha1.NewDRAResourceHealthClient(conn)
	}
	return d, nil
}

// Services are the services the driver offers that the interposer serves.
func (d *DriverClient) Services() []string {
	var out []string
	for _, s := range knownServices {
		if slices.Contains(d.services, s) {
			out = append(out, s)
		}
	}
	return out
}

// NodePrepareResources calls the driver's NodePrepareResources.
func (d *DriverClient) NodePrepareResources(ctx context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	if d.v1 != nil {
		return d.v1.NodePrepareResources(ctx, req)
	}
	in, err := convert(req, &drav1beta1.NodePrepareResourcesRequest{})
	if err != nil {
		return nil, err
	}
	out, err := d.v1beta1.NodePrepareResources(ctx, in)
	if err != nil {
		return nil, err
	}
	return convert(out, &drapb.NodePrepareResourcesResponse{})
}

// NodeUnprepareResources calls the driver's NodeUnprepareResources.
func (d *DriverClient) NodeUnprepareResources(ctx context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	if d.v1 != nil {
		return d.v1.NodeUnprepareResources(ctx, req)
	}
	in, err := convert(req, &drav1beta1.NodeUnprepareResourcesRequest{})
	if err != nil {
		return nil, err
	}
	out, err := d.v1beta1.NodeUnprepareResources(ctx, in)
	if err != nil {
		return nil, err
	}
	return convert(out, &drapb.NodeUnprepareResourcesResponse{})
}

// watchHealthV1 opens the driver's DRAResourceHealth v1 stream. An
// instance without the service (one that a rolling update brought in may
// offer fewer than the first, whose services the interposer serves)
// answers Unimplemented, as the driver itself would.
func (d *DriverClient) watchHealthV1(ctx context.Context, req *dhv1.NodeWatchResourcesRequest) (grpc.ServerStreamingClient[dhv1.NodeWatchResourcesResponse], error) {
	if d.healthV1 == nil {
		return nil, status.Errorf(codes.Unimplemented, "driver endpoint %s does not offer %s", d.endpoint, dhv1.DRAResourceHealthService)
	}
	return d.healthV1.NodeWatchResources(ctx, req)
}

// watchHealthV1alpha1 is watchHealthV1 for v1alpha1.
func (d *DriverClient) watchHealthV1alpha1(ctx context.Context, req *dhv1alpha1.NodeWatchResourcesRequest) (grpc.ServerStreamingClient[dhv1alpha1.NodeWatchResourcesResponse], error) {
	if d.healthV1alpha1 == nil {
		return nil, status.Errorf(codes.Unimplemented, "driver endpoint %s does not offer %s", d.endpoint, dhv1alpha1.DRAResourceHealthService)
	}
	return d.healthV1alpha1.NodeWatchResources(ctx, req)
}

// Close closes the connection.
func (d *DriverClient) Close() error { return d.conn.Close() }

// convert copies a message into a wire-compatible one of another version.
func convert[T proto.Message](from proto.Message, to T) (T, error) {
	data, err := proto.Marshal(from)
	if err == nil {
		err = proto.Unmarshal(data, to)
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("convert %T to %T: %w", from, to, err)
	}
	return to, nil
}
