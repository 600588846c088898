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
	conn, err := dial(endpoint)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := drapb.NewDRAPluginClient(conn).NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: claims})
	if err != nil {
		return nil, fmt.Errorf("call %s NodePrepareResources on %s: %w", drapb.DRAPluginService, endpoint, err)
	}
	return resp.GetClaims(), nil
}

// Unprepare calls DRAPlugin v1 NodeUnprepareResources for the claims on
// endpoint within timeout and returns the driver's answer for each claim by
// UID, as Prepare does.
func Unprepare(ctx context.Context, endpoint string, timeout time.Duration, claims ...*drapb.Claim) (map[string]*drapb.NodeUnprepareResourceResponse, error) {
	conn, err := dial(endpoint)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := drapb.NewDRAPluginClient(conn).NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: claims})
	if err != nil {
		return nil, fmt.Errorf("call %s NodeUnprepareResources on %s: %w", drapb.DRAPluginService, endpoint, err)
	}
	return resp.GetClaims(), nil
}
