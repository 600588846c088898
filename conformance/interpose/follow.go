package interpose

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Following the driver. A driver with per-pod socket names
// (kubeletplugin.RollingUpdate) registers as <driver>-<pod UID>-reg.sock
// (or a shorter hashed name when that is too long) and serves
// dra-<pod UID>.sock: every pod of its DaemonSet has sockets of its own,
// and during a rolling update the old and the new pod serve at once. The
// kubelet then calls the most recently registered instance that is
// connected; the interposer, registered with the kubelet once under the
// driver's name, does the same behind its own endpoint: it forwards to the
// instance whose registration socket is the newest of those that answer
// GetInfo, and moves on when a newer one appears or the one it follows
// goes away. A driver with fixed socket names is the case of one socket.

const (
	// followInterval is how often the follower looks for new instances.
	followInterval = 500 * time.Millisecond
	// probeTimeout bounds a GetInfo or NotifyRegistrationStatus call to an
	// instance: a stale socket refuses at once, a serving one answers fast.
	probeTimeout = 2 * time.Second
)

// instance is one serving instance of the driver: its registration socket
// (as bound when it answered GetInfo), its answer and the clients on both
// of its sockets.
type instance struct {
	socket  string
	modTime time.Time
	info    *registerapi.PluginInfo
	regConn *grpc.ClientConn
	reg     registerapi.RegistrationClient
	driver  *DriverClient
}

func (in *instance) close() error {
	return errors.Join(in.driver.Close(), in.regConn.Close())
}

// socketFile is a registration socket and when it was bound.
type socketFile struct {
	path    string
	modTime time.Time
}

// driverSource names where the interposer looks for the driver.
func (ip *Interposer) driverSource() string {
	if ip.cfg.DriverRegistrarDir != "" {
		return ip.cfg.DriverRegistrarDir
	}
	return ip.cfg.DriverRegistrationSocket
}

// driverSockets lists the driver's registration sockets, newest first:
// Config.DriverRegistrationSocket if it exists, else every socket in
// Config.DriverRegistrarDir.
func (ip *Interposer) driverSockets() ([]socketFile, error) {
	paths := []string{ip.cfg.DriverRegistrationSocket}
	if dir := ip.cfg.DriverRegistrarDir; dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("read driver registrar directory %s: %w", dir, err)
		}
		paths = paths[:0]
		for _, e := range entries {
			if e.Type() == fs.ModeSocket {
				paths = append(paths, filepath.Join(dir, e.Name()))
			}
		}
	}
	var sockets []socketFile
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().Type() == fs.ModeSocket {
			sockets = append(sockets, socketFile{p, fi.ModTime()})
		}
	}
	sort.SliceStable(sockets, func(i, j int) bool {
		if !sockets[i].modTime.Equal(sockets[j].modTime) {
			return sockets[i].modTime.After(sockets[j].modTime)
		}
		return sockets[i].path < sockets[j].path
	})
	return sockets, nil
}

// probe asks a registration socket GetInfo and connects to the endpoint of
// the DRA plugin it names. Once the interposer serves, an instance must be
// the driver it registered (same name) on an endpoint other than its own.
func (ip *Interposer) probe(ctx context.Context, s socketFile) (*instance, error) {
	conn, err := grpc.NewClient("unix://"+s.path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect to driver registration socket %s: %w", s.path, err)
	}
	in := &instance{socket: s.path, modTime: s.modTime, regConn: conn, reg: registerapi.NewRegistrationClient(conn)}
	cctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	in.info, err = in.reg.GetInfo(cctx, &registerapi.InfoRequest{})
	switch {
	case err != nil:
		err = fmt.Errorf("ask driver registration socket %s GetInfo: %w", s.path, err)
	case in.info.GetType() != registerapi.DRAPlugin || in.info.GetName() == "" || in.info.GetEndpoint() == "":
		err = fmt.Errorf("%w: %s answers type %q, name %q, endpoint %q (want type %s with a name and an endpoint)",
			ErrNotDRAPlugin, s.path, in.info.GetType(), in.info.GetName(), in.info.GetEndpoint(), registerapi.DRAPlugin)
	case ip.name != "" && in.info.GetName() != ip.name:
		err = fmt.Errorf("driver registration socket %s serves driver %s, not %s", s.path, in.info.GetName(), ip.name)
	case in.info.GetEndpoint() == ip.endpoint:
		err = fmt.Errorf("driver registration socket %s names the interposer's own endpoint %s", s.path, ip.endpoint)
	default:
		if in.driver, err = NewDriverClient(in.info.GetEndpoint(), in.info.GetSupportedVersions()); err != nil {
			err = fmt.Errorf("%w: %w", ErrNotDRAPlugin, err)
		}
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return in, nil
}

// scan forgets the instances whose registration socket went away (the pod
// stopped) or was bound anew (its container restarted), and follows the
// newest socket that serves the driver. It returns the instance it follows,
// or why there is none; then the calls keep going to the last one (it may
// come back on the same endpoint).
func (ip *Interposer) scan(ctx context.Context) (*instance, error) {
	sockets, err := ip.driverSockets()
	if err != nil {
		return nil, err
	}
	bound := make(map[string]time.Time, len(sockets))
	for _, s := range sockets {
		bound[s.path] = s.modTime
	}
	for path, in := range ip.known {
		if t, ok := bound[path]; !ok || !t.Equal(in.modTime) {
			delete(ip.known, path)
			if in != ip.cur.Load() {
				_ = in.close()
			}
		}
	}
	if len(sockets) == 0 {
		if dir := ip.cfg.DriverRegistrarDir; dir != "" {
			return nil, fmt.Errorf("no socket in %s (is it the driver's registrar directory?)", dir)
		}
		socket := ip.cfg.DriverRegistrationSocket
		return nil, fmt.Errorf("%s not found (is the driver's registrar directory %s?)", socket, filepath.Dir(socket))
	}
	var errs []error
	for _, s := range sockets {
		in := ip.known[s.path]
		if in == nil {
			if in, err = ip.probe(ctx, s); err != nil {
				errs = append(errs, err)
				continue
			}
			ip.known[s.path] = in
		}
		ip.followInstance(ctx, in)
		return in, nil
	}
	return nil, errors.Join(errs...)
}

// followInstance sends the calls to in from now on. The kubelet registered
// the interposer once and will not register again, so in gets the
// kubelet's last registration status from here, as the kubelet would have
// given it on registering in itself (a driver's health can wait for it, as
// the reference drivers' /healthz does).
func (ip *Interposer) followInstance(ctx context.Context, in *instance) {
	if ip.cur.Load() == in {
		return
	}
	old := ip.cur.Swap(in)
	if old != nil {
		klog.FromContext(ctx).Info("Following a new driver instance", "driverRegistration", in.socket, "driverEndpoint", in.info.Endpoint,
			"previousRegistration", old.socket, "previousEndpoint", old.info.Endpoint)
		if ip.known[old.socket] != old {
			_ = old.close()
		}
	}
	if st := ip.lastStatus.Load(); st != nil {
		cctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		if _, err := in.reg.NotifyRegistrationStatus(cctx, st); err != nil {
			klog.FromContext(ctx).Error(err, "Pass the kubelet's registration status on to the new driver instance", "driverRegistration", in.socket)
		}
	}
}

// follow scans the driver's registration sockets every followInterval
// until ctx ends.
func (ip *Interposer) follow(ctx context.Context) {
	defer close(ip.followDone)
	ticker := time.NewTicker(followInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if _, err := ip.scan(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("No driver instance to follow; calls go to the last one", "err", err)
		}
	}
}
