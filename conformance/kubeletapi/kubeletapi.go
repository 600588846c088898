package kubeletapi

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Paths below the kubelet's root dir (its --root-dir).
const (
	// PluginRegistryDir is the directory the kubelet's plugin watcher
	// watches for registration sockets.
	PluginRegistryDir = "plugins_registry"
	// PodResourcesSocket is the kubelet's podresources socket.
	PodResourcesSocket = "pod-resources/kubelet.sock"
)

// Registration is what one registration socket answered.
type Registration struct {
	// Socket is the registration socket's path.
	Socket string
	// Info is its GetInfo answer; nil when Err is set.
	Info *registerapi.PluginInfo
	// Err says why the socket did not answer (a stale socket file whose
	// plugin is gone refuses the connection).
	Err error
}

// Registrations asks every unix socket below dir (recursively, as the
// kubelet's plugin watcher walks it) GetInfo, each within timeout, and
// returns their answers sorted by socket path.
func Registrations(ctx context.Context, dir string, timeout time.Duration) ([]Registration, error) {
	var sockets []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSocket != 0 {
			sockets = append(sockets, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk the plugin registry %s: %w", dir, err)
	}
	sort.Strings(sockets)
	out := make([]Registration, 0, len(sockets))
	for _, s := range sockets {
		info, err := getInfo(ctx, s, timeout)
		out = append(out, Registration{Socket: s, Info: info, Err: err})
	}
	return out, nil
}

func getInfo(ctx context.Context, socket string, timeout time.Duration) (*registerapi.PluginInfo, error) {
	conn, err := dial(socket)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err := registerapi.NewRegistrationClient(conn).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("call GetInfo on %s: %w", socket, err)
	}
	return info, nil
}

// ServesDRAPlugin calls DRAPlugin v1 NodeUnprepareResources with no claims
// on endpoint within timeout: an error when the call fails or the answer
// names a claim.
func ServesDRAPlugin(ctx context.Context, endpoint string, timeout time.Duration) error {
	st, err := os.Stat(endpoint)
	if err != nil {
		return fmt.Errorf("stat endpoint %s: %w", endpoint, err)
	}
	if st.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("endpoint %s is not a unix socket (%s)", endpoint, st.Mode().Type())
	}
	conn, err := dial(endpoint)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := drapb.NewDRAPluginClient(conn).NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{})
	if err != nil {
		return fmt.Errorf("call %s NodeUnprepareResources with no claims on %s: %w", drapb.DRAPluginService, endpoint, err)
	}
	if n := len(resp.GetClaims()); n != 0 {
		return fmt.Errorf("endpoint %s answered NodeUnprepareResources of no claims with %d claims", endpoint, n)
	}
	return nil
}

// serviceName is a gRPC service as DRA's supported versions name it:
// <proto package version>.<service>.
var serviceName = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?\.[A-Z][A-Za-z0-9]*$`)

// ServiceName says whether a supported version names a gRPC service such
// as "v1.DRAPlugin" or "v1alpha1.DRAResourceHealth".
func ServiceName(v string) bool { return serviceName.MatchString(v) }

// PodResources is a client of the kubelet's podresources v1 API.
type PodResources struct {
	conn   *grpc.ClientConn
	client podresourcesv1.PodResourcesListerClient
}

// NewPodResources connects (lazily) to the kubelet's podresources socket.
func NewPodResources(socket string) (*PodResources, error) {
	conn, err := dial(socket)
	if err != nil {
		return nil, err
	}
	return &PodResources{conn: conn, client: podresourcesv1.NewPodResourcesListerClient(conn)}, nil
}

// List returns every pod the kubelet reports.
func (p *PodResources) List(ctx context.Context) ([]*podresourcesv1.PodResources, error) {
	resp, err := p.client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("call the kubelet's podresources List: %w", err)
	}
	return resp.GetPodResources(), nil
}

// Get returns one pod's resources; the gRPC error as it came (NotFound for
// a pod the kubelet does not know).
func (p *PodResources) Get(ctx context.Context, namespace, name string) (*podresourcesv1.PodResources, error) {
	resp, err := p.client.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: namespace, PodName: name})
	if err != nil {
		return nil, fmt.Errorf("call the kubelet's podresources Get of pod %s/%s: %w", namespace, name, err)
	}
	return resp.GetPodResources(), nil
}

// Close closes the connection.
func (p *PodResources) Close() error { return p.conn.Close() }

func dial(socket string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", socket, err)
	}
	return conn, nil
}
