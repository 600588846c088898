package kubeletapi

import (
	"context"
	"fmt"
	"time"

	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// Prepare calls DRAPlugin v1 NodePrepareResources for the claims on
// endpoint within timeout, as the kubelet does, and returns the driver's
// answer for each claim by UID (a claim missing from the answer is missing
// from the map). An error means the call itself failed.
func Prepare(ctx context.Context, endpoint string, timeout time.Duration, claims ...*drapb.Claim) (map[string]*drapb.NodePrepareResourceResponse, error) {
	return call(ctx, endpoint, timeout, "NodePrepareResources", func(ctx context.Context, c drapb.DRAPluginClient) (map[string]*drapb.NodePrepareResourceResponse, error) {
		resp, err := c.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: claims})
		return resp.GetClaims(), err
	})
}

// Unprepare calls DRAPlugin v1 NodeUnprepareResources for the claims on
// endpoint within timeout and returns the driver's answer for each claim by
// UID, as Prepare does.
func Unprepare(ctx context.Context, endpoint string, timeout time.Duration, claims ...*drapb.Claim) (map[string]*drapb.NodeUnprepareResourceResponse, error) {
	return call(ctx, endpoint, timeout, "NodeUnprepareResources", func(ctx context.Context, c drapb.DRAPluginClient) (map[string]*drapb.NodeUnprepareResourceResponse, error) {
		resp, err := c.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: claims})
		return resp.GetClaims(), err
	})
}

// call makes one DRAPlugin call, method, on a connection of its own to
// endpoint within timeout.
func call[R any](ctx context.Context, endpoint string, timeout time.Duration, method string, do func(context.Context, drapb.DRAPluginClient) (R, error)) (R, error) {
	var none R
	conn, err := dial(endpoint)
	if err != nil {
		return none, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := do(ctx, drapb.NewDRAPluginClient(conn))
	if err != nil {
		return none, fmt.Errorf("call %s %s on %s: %w", drapb.DRAPluginService, method, endpoint, err)
	}
	return r, nil
}
