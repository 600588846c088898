package interpose

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"drakit.dev/drakit/internal/unixsocket"
)

// Errors of Start about the driver and the sockets.
var (
	// ErrNoDriver: the driver's registration socket did not appear (or
	// never answered GetInfo) within Config.DriverWait.
	ErrNoDriver = errors.New("driver registration socket not served")
	// ErrNotDRAPlugin: the plugin registered is not a DRA plugin, or its
	// PluginInfo lacks a name or endpoint.
	ErrNotDRAPlugin = errors.New("not a DRA plugin")
	// ErrSocketInUse: a socket the interposer would create is served by
	// another process.
	ErrSocketInUse = errors.New("socket in use")
)

// Interposer sits between the kubelet and one driver. Start it with Start;
// Close stops it and removes its sockets.
type Interposer struct {
	cfg   Config
	hooks Hooks
	// name and services are the driver's, as the first instance answered
	// GetInfo: what the interposer registers with and serves.
	name     string
	services []string
	// cur is the driver instance the calls go to (follow.go); known are
	// the instances the follower found serving, by registration socket.
	// Only Start and then the follower touch known.
	cur        atomic.Pointer[instance]
	known      map[string]*instance
	stopFollow context.CancelFunc
	followDone chan struct{}
	// lastStatus is the kubelet's last NotifyRegistrationStatus.
	lastStatus atomic.Pointer[registerapi.RegistrationStatus]
	rules      ruleSet
	rec        *recorder
	conns      *connListener
	endpoint   string
	regSocket  string
	registered atomic.Bool
	dra, reg   *grpc.Server
	control    *http.Server
	controlLn  net.Listener
	sockets    []string
}

// Run starts the interposer and serves until ctx ends, then closes it.
func Run(ctx context.Context, cfg Config) error {
	ip, err := Start(ctx, cfg, nil)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return ip.Close()
}

// Hooks are functions rules call by name (action hook), e.g. one that
// restarts the driver.
type Hooks map[string]func(context.Context) error

// Start validates cfg, loads its rules, asks the driver's registration
// socket who it is, serves the driver's DRA services on its own endpoint,
// registers with the kubelet, serves the control endpoint and follows the
// driver's registration sockets until Close. hooks may be nil.
func Start(ctx context.Context, cfg Config, hooks Hooks) (_ *Interposer, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	ip := &Interposer{cfg: cfg, hooks: hooks, known: map[string]*instance{}}
	defer func() {
		if err != nil {
			_ = ip.Close()
		}
	}()
	if cfg.RulesFile != "" {
		rules, err := LoadRules(cfg.RulesFile)
		if err != nil {
			return nil, err
		}
		for _, r := range rules {
			if _, err := ip.rules.add(r); err != nil {
				return nil, fmt.Errorf("rules %s: %w", cfg.RulesFile, err)
			}
		}
	}
	if ip.rec, err = newRecorder(cfg.Records); err != nil {
		return nil, err
	}
	first, err := ip.discover(ctx)
	if err != nil {
		return nil, err
	}
	ip.name, ip.services = first.info.Name, first.driver.Services()
	ip.endpoint = cfg.Endpoint
	if ip.endpoint == "" {
		// Beside the driver's: every instance of a driver serves in the
		// same plugin data directory.
		ip.endpoint = filepath.Join(filepath.Dir(first.info.Endpoint), "interpose.sock")
	}
	ip.regSocket = filepath.Join(cfg.KubeletRegistrarDir, ip.name+"-reg.sock")
	for _, s := range []struct{ what, path string }{{"endpoint", ip.endpoint}, {"registration", ip.regSocket}} {
		if err := unixsocket.CheckSocketPath(s.path); err != nil {
			return nil, fmt.Errorf("%w: %s %w", ErrInvalidConfig, s.what, err)
		}
	}
	if ip.endpoint == first.info.Endpoint {
		return nil, fmt.Errorf("%w: --endpoint %s is the driver's own endpoint", ErrInvalidConfig, ip.endpoint)
	}

	draLn, err := ip.listen("unix", ip.endpoint)
	if err != nil {
		return nil, err
	}
	ip.conns = newConnListener(draLn)
	ip.dra = grpc.NewServer()
	ip.registerDRA(ip.dra)
	go func() { _ = ip.dra.Serve(ip.conns) }()

	if cfg.Control != "" {
		network, _ := controlNetwork(cfg.Control)
		if ip.controlLn, err = ip.listen(network, cfg.Control); err != nil {
			return nil, err
		}
		ip.control = &http.Server{Handler: ip.controlHandler(), ReadHeaderTimeout: 10 * time.Second,
			BaseContext: func(net.Listener) context.Context { return klog.NewContext(context.Background(), logger) }}
		go func() { _ = ip.control.Serve(ip.controlLn) }()
	}

	regLn, err := ip.listen("unix", ip.regSocket)
	if err != nil {
		return nil, err
	}
	ip.reg = grpc.NewServer()
	registerapi.RegisterRegistrationServer(ip.reg, registration{ip: ip})
	go func() { _ = ip.reg.Serve(regLn) }()

	followCtx, stop := context.WithCancel(klog.NewContext(context.Background(), logger))
	ip.stopFollow, ip.followDone = stop, make(chan struct{})
	go ip.follow(followCtx)
	logger.Info("Interposing", "driver", ip.name, "driverRegistration", first.socket, "driverEndpoint", first.info.Endpoint,
		"endpoint", ip.endpoint, "registration", ip.regSocket, "services", ip.services, "control", ip.ControlAddr())
	return ip, nil
}

// discover waits for the driver's registration socket to answer GetInfo
// as a DRA plugin and connects to the driver's endpoint: the first instance
// the interposer follows.
func (ip *Interposer) discover(ctx context.Context) (*instance, error) {
	var first *instance
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, ip.cfg.DriverWait, true, func(ctx context.Context) (bool, error) {
		first, last = ip.scan(ctx)
		// A socket that answers as something else will not change its mind.
		if errors.Is(last, ErrNotDRAPlugin) {
			return false, last
		}
		return first != nil, nil
	})
	if errors.Is(err, ErrNotDRAPlugin) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s within %s: %w", ErrNoDriver, ip.driverSource(), ip.cfg.DriverWait, last)
	}
	return first, nil
}

// listen creates a listener, replacing a stale unix socket file (one no
// process serves) and refusing one that is served; it remembers the
// socket for Close.
func (ip *Interposer) listen(network, addr string) (net.Listener, error) {
	if network == "unix" {
		if fi, err := os.Lstat(addr); err == nil {
			if fi.Mode().Type() != fs.ModeSocket {
				return nil, fmt.Errorf("listen on %s: exists and is not a socket", addr)
			}
			if c, err := net.DialTimeout("unix", addr, time.Second); err == nil {
				_ = c.Close()
				return nil, fmt.Errorf("%w: %s is served by another process", ErrSocketInUse, addr)
			}
			if err := os.Remove(addr); err != nil {
				return nil, fmt.Errorf("remove stale socket %s: %w", addr, err)
			}
		}
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if network == "unix" {
		ip.sockets = append(ip.sockets, addr)
	}
	return l, nil
}

// Close stops serving and removes the interposer's sockets, the
// registration socket first (the kubelet deregisters the driver).
func (ip *Interposer) Close() error {
	var errs []error
	if ip.stopFollow != nil {
		ip.stopFollow()
		<-ip.followDone
	}
	if ip.reg != nil {
		ip.reg.Stop()
	}
	if ip.dra != nil {
		ip.dra.Stop()
	}
	if ip.control != nil {
		errs = append(errs, ip.control.Close())
	}
	for i := len(ip.sockets) - 1; i >= 0; i-- {
		if err := os.Remove(ip.sockets[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove socket %s: %w", ip.sockets[i], err))
		}
	}
	ip.sockets = nil
	for _, in := range ip.known {
		errs = append(errs, in.close())
	}
	if in := ip.cur.Load(); in != nil && ip.known[in.socket] != in {
		errs = append(errs, in.close())
	}
	ip.known = nil
	if ip.rec != nil {
		errs = append(errs, ip.rec.close())
	}
	return errors.Join(errs...)
}

// Info is what the interposer serves and for whom.
type Info struct {
	Driver string `json:"driver"`
	// DriverRegistration and DriverEndpoint are the sockets of the driver
	// instance the calls go to now.
	DriverRegistration string   `json:"driverRegistration"`
	DriverEndpoint     string   `json:"driverEndpoint"`
	Endpoint           string   `json:"endpoint"`
	Registration       string   `json:"registration"`
	Services           []string `json:"services"`
	// Registered says the kubelet reported the registration successful.
	Registered bool `json:"registered"`
}

// Info describes the interposer.
func (ip *Interposer) Info() Info {
	in := ip.cur.Load()
	return Info{Driver: ip.name, DriverRegistration: in.socket, DriverEndpoint: in.info.Endpoint, Endpoint: ip.endpoint,
		Registration: ip.regSocket, Services: ip.services, Registered: ip.registered.Load()}
}

// ControlAddr is the control endpoint's address ("" without one).
func (ip *Interposer) ControlAddr() string {
	if ip.controlLn == nil {
		return ""
	}
	return ip.controlLn.Addr().String()
}

// AddRule arms a rule and returns its ID.
func (ip *Interposer) AddRule(r Rule) (int, error) { return ip.rules.add(r) }

// ClearRules disarms every rule and says how many there were.
func (ip *Interposer) ClearRules() int { return ip.rules.clear() }

// Rules lists the armed rules.
func (ip *Interposer) Rules() []ArmedRule { return ip.rules.list() }

// Records returns the records f selects, oldest first.
func (ip *Interposer) Records(f Filter) []Record { return ip.rec.query(f) }

// claimsOf is a helper for callers building requests.
func claimsOf(claims []ClaimRef) []*drapb.Claim {
	out := make([]*drapb.Claim, 0, len(claims))
	for _, c := range claims {
		out = append(out, &drapb.Claim{Namespace: c.Namespace, Name: c.Name, Uid: c.UID})
	}
	return out
}
