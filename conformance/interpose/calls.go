package interpose

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// prepare serves one NodePrepareResources of the kubelet (service is the
// one it used): the rules before, the driver, the rules after, recorded.
func (ip *Interposer) prepare(ctx context.Context, service string, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	rec := Record{Method: MethodPrepare, Service: service, Source: SourceKubelet, Start: time.Now(), Claims: claimRecords(req.GetClaims())}
	var resp *drapb.NodePrepareResourcesResponse
	err := ip.intercept(ctx, &rec, req.GetClaims(), func(ctx context.Context, driver *DriverClient) error {
		var err error
		resp, err = driver.NodePrepareResources(ctx, req)
		if err == nil {
			notePrepared(rec.Claims, resp)
		}
		return err
	}, func(uid, msg string) {
		resp.Claims[uid] = &drapb.NodePrepareResourceResponse{Error: msg}
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// unprepare serves one NodeUnprepareResources of the kubelet.
func (ip *Interposer) unprepare(ctx context.Context, service string, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	rec := Record{Method: MethodUnprepare, Service: service, Source: SourceKubelet, Start: time.Now(), Claims: claimRecords(req.GetClaims())}
	var resp *drapb.NodeUnprepareResourcesResponse
	err := ip.intercept(ctx, &rec, req.GetClaims(), func(ctx context.Context, driver *DriverClient) error {
		var err error
		resp, err = driver.NodeUnprepareResources(ctx, req)
		if err == nil {
			noteUnprepared(rec.Claims, resp)
		}
		return err
	}, func(uid, msg string) {
		resp.Claims[uid] = &drapb.NodeUnprepareResourceResponse{Error: msg}
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// intercept runs one call of the kubelet: the rules before it (a fault
// that fails the call keeps it from the driver), the driver instance
// followed when the call reaches it, the rules after it (replace sets a
// claim's per-claim error in the driver's answer), and records it.
func (ip *Interposer) intercept(ctx context.Context, rec *Record, claims []*drapb.Claim, call func(context.Context, *DriverClient) error, replace func(uid, msg string)) error {
	err := ip.fire(ctx, rec, PointBefore, claims, nil)
	if err == nil {
		in := ip.cur.Load()
		rec.DriverEndpoint = in.info.Endpoint
		start := time.Now()
		driverErr := call(ctx, in.driver)
		rec.DriverDuration = time.Since(start)
		rec.DriverCode, rec.DriverMessage = codeOf(driverErr)
		if driverErr != nil {
			replace = nil // no answer to replace a claim's in
		}
		// A fault after the call answers instead of the driver; else the
		// caller gets the driver's answer, its error included.
		if err = ip.fire(ctx, rec, PointAfter, claims, replace); err == nil {
			err = driverErr
		}
	}
	rec.Duration = time.Since(rec.Start)
	rec.Code, rec.Message = codeOf(err)
	ip.record(ctx, *rec)
	if rec.Dropped {
		if p, ok := peer.FromContext(ctx); !ok || !ip.conns.drop(p.Addr.String()) {
			klog.FromContext(ctx).Error(nil, "No connection to drop", "method", rec.Method)
		}
	}
	return err
}

// fire applies the rules that fire at point, in order; a rule that
// answers the call (error, drop) ends it with that status.
func (ip *Interposer) fire(ctx context.Context, rec *Record, point string, claims []*drapb.Claim, replace func(uid, msg string)) error {
	logger := klog.FromContext(ctx)
	for _, r := range ip.rules.take(rec.Method, point, claims) {
		rec.Faults = append(rec.Faults, r.label())
		logger.V(2).Info("Fault fires", "rule", r.label(), "method", rec.Method, "point", point)
		switch {
		case r.Delay != "":
			d, _ := time.ParseDuration(r.Delay) // validated when armed
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			}
		case r.Error != nil:
			return status.Error(codeByName[r.Error.Code], r.Error.Message)
		case r.Drop:
			rec.Dropped = true // intercept closes the connection once the call is recorded
			return status.Error(codes.Unavailable, "connection dropped by the interposer")
		case r.ClaimError != "":
			if replace == nil {
				continue
			}
			i := 0
			if r.Claim != "" {
				i = claimIndex(claims, r.Claim)
			}
			if i < 0 || i >= len(claims) {
				continue
			}
			replace(claims[i].GetUid(), r.ClaimError)
			rec.Claims[i].InjectedError = r.ClaimError
		case r.Exec != nil:
			out, err := exec.CommandContext(ctx, r.Exec[0], r.Exec[1:]...).CombinedOutput()
			if err != nil {
				logger.Error(err, "Fault command failed", "rule", r.label(), "output", string(out))
			}
		case r.Hook != "":
			hook, ok := ip.hooks[r.Hook]
			if !ok {
				logger.Error(nil, "Fault hook unknown", "rule", r.label(), "hook", r.Hook)
				continue
			}
			if err := hook(ctx); err != nil {
				logger.Error(err, "Fault hook failed", "rule", r.label())
			}
		}
	}
	return nil
}

// record keeps rec, logging a records file that cannot be written, and
// returns it numbered.
func (ip *Interposer) record(ctx context.Context, rec Record) Record {
	rec, err := ip.rec.add(rec)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Record call", "method", rec.Method)
	}
	return rec
}

// forwardHealth forwards the driver's health stream of one version to the
// kubelet until either side ends it, and records it.
func forwardHealth[Resp any](ip *Interposer, service string, open func(context.Context, *DriverClient) (grpc.ServerStreamingClient[Resp], error), out grpc.ServerStreamingServer[Resp]) error {
	ctx := out.Context()
	driver := ip.cur.Load()
	rec := Record{Method: "NodeWatchResources", Service: service, Source: SourceKubelet, Start: time.Now(), DriverEndpoint: driver.info.Endpoint}
	err := func() error {
		in, err := open(ctx, driver.driver)
		if err != nil {
			return err
		}
		for {
			msg, err := in.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := out.Send(msg); err != nil {
				return err
			}
			rec.Responses++
		}
	}()
	rec.Duration = time.Since(rec.Start)
	rec.Code, rec.Message = codeOf(err)
	ip.record(ctx, rec)
	return err
}

// Prepare calls the driver's NodePrepareResources directly (no fault
// fires) and returns the call's record, which the records keep too.
func (ip *Interposer) Prepare(ctx context.Context, claims []*drapb.Claim) Record {
	in := ip.cur.Load()
	rec := Record{Method: MethodPrepare, Service: "direct", Source: SourceDirect, Start: time.Now(), Claims: claimRecords(claims), DriverEndpoint: in.info.Endpoint}
	resp, err := in.driver.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: claims})
	if err == nil {
		notePrepared(rec.Claims, resp)
	}
	return ip.finishDirect(ctx, rec, err)
}

// Unprepare calls the driver's NodeUnprepareResources directly.
func (ip *Interposer) Unprepare(ctx context.Context, claims []*drapb.Claim) Record {
	in := ip.cur.Load()
	rec := Record{Method: MethodUnprepare, Service: "direct", Source: SourceDirect, Start: time.Now(), Claims: claimRecords(claims), DriverEndpoint: in.info.Endpoint}
	resp, err := in.driver.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: claims})
	if err == nil {
		noteUnprepared(rec.Claims, resp)
	}
	return ip.finishDirect(ctx, rec, err)
}

func (ip *Interposer) finishDirect(ctx context.Context, rec Record, err error) Record {
	rec.Duration = time.Since(rec.Start)
	rec.DriverDuration = rec.Duration
	rec.Code, rec.Message = codeOf(err)
	rec.DriverCode, rec.DriverMessage = rec.Code, rec.Message
	return ip.record(ctx, rec)
}
