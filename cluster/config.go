package cluster

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("invalid cluster config")

// maxSocketPath is the longest path a unix socket can have (sun_path less
// its terminating NUL).
const maxSocketPath = 107

// DriverNameReserve is the driver name length, in bytes, that every node's
// kubelet root dir leaves room for in the longest socket path a DRA driver
// creates below it: the per-pod DRA socket of PerPodDRASocket. Validate
// refuses a KubeletRootBase that leaves less; the default leaves 37 bytes
// (38 on nodes 1 to 9). MaxDriverName gives a kubelet root dir's exact room.
const DriverNameReserve = 32

// DefaultFeatureGates is every DRA-related feature gate of Kubernetes v1.37.2
// that is not locked to its default (local-cluster.md §9.1), all enabled. The
// control plane gets it as --feature-gates, the kubelet in its config file.
const DefaultFeatureGates = "DRAConsumableCapacity=true,DRADerivedAttributes=true,DRADeviceBindingConditions=true," +
	"DRADeviceCompatibilityGroups=true,DRADeviceTaintRules=true,DRADeviceTaints=true,DRAFractionalCapacityRange=true," +
	"DRAListTypeAttributes=true,DRANodeAllocatableResources=true,DRAOptionalNodeOperations=true," +
	"DRAPartitionableDevices=true,DRAPartitionableDevicesType=true,DRAResourceClaimGranularStatusAuthorization=true," +
	"DRAResourcePoolStatus=true,DRASchedulerFilterTimeout=true,DRAWorkloadResourceClaims=true,GenericWorkload=true"

// DefaultRuntimeConfig enables every resource.k8s.io version and
// scheduling.k8s.io/v1beta1, which GenericWorkload needs (§9.1, §15).
const DefaultRuntimeConfig = "scheduling.k8s.io/v1beta1=true,resource.k8s.io/v1=true,resource.k8s.io/v1beta1=true," +
	"resource.k8s.io/v1beta2=true,resource.k8s.io/v1alpha3=true"

// Config describes one local cluster. Every exported field maps to one flag
// of the local cluster's in `drakit env` (and `drakit images import`).
type Config struct {
	// RunDir holds all of the cluster's state: PKI, etcd data, containerd
	// root and sockets, kubelet root, logs, PID files, the CDI dir and the
	// emulator root. Unix sockets live below it, so it must stay short.
	RunDir string
	// ComponentsDir holds the built components, one <name>-<version>/bin
	// per component (scripts/build-components.sh).
	ComponentsDir string
	// ImagesDir holds docker-archive tarballs; Up imports every *.tar there
	// and builds the pause image there when it is missing.
	ImagesDir string

	KubernetesVersion string
	EtcdVersion       string
	ContainerdVersion string
	CrictlVersion     string

	// NodeName is the kubelet's --hostname-override: an IP literal in
	// 127.0.0.0/8, so Node addresses stay on loopback and nothing does DNS.
	NodeName string
	// ServiceCIDR is the apiserver's --service-cluster-ip-range. It must
	// exist, but no traffic may ever go to it.
	ServiceCIDR string
	// CgroupRoot is the kubelet's cgroupRoot: a single top-level cgroup
	// that Up creates in every hierarchy and Down removes. Node i > 1 gets
	// CgroupRoot-<i>.
	CgroupRoot string
	// KubeletRootBase is where the nodes' kubelet root dirs are mounted:
	// node i's at <KubeletRootBase>/k<i>, a bind mount of its store in
	// RunDir (<node dir>/kubelet/root). A DRA driver's sockets live below
	// the kubelet root dir, and a RunDir in a home directory is too long
	// for a per-pod DRA socket (PerPodDRASocket) of a real driver name:
	// this short path keeps DriverNameReserve bytes free for the name.
	// Up creates it (its parent must exist) and Down removes it when Up
	// created it. It must neither contain RunDir nor lie inside it.
	KubeletRootBase string
	// Nodes is how many nodes (each a kubelet with its own containerd) the
	// cluster runs, 1..MaxNodes. Node i is named NodeName plus i-1; see
	// NodePaths for its paths.
	Nodes int

	APIServerPort         int
	EtcdClientPort        int
	EtcdPeerPort          int
	EtcdMetricsPort       int
	ControllerManagerPort int
	SchedulerPort         int
	KubeletPort           int
	KubeletHealthzPort    int

	// FeatureGates is the control plane's --feature-gates value and the
	// kubelet's featureGates: Name=true|false, comma-separated.
	FeatureGates string
	// RuntimeConfig is the apiserver's --runtime-config: group/version=bool,
	// comma-separated.
	RuntimeConfig string
	// Verbosity is every component's --v.
	Verbosity int
	// EmulatorNRIPlugin is the drakit executable whose `emulator nri-plugin`
	// every node's containerd runs as a pre-registered NRI plugin with that
	// node's EmulatorRoot: containers given an emulated GPU get NVML whatever
	// the DRA driver's CDI edits hold (package emulator/nri). Empty: NRI
	// stays off.
	EmulatorNRIPlugin string

	// StartTimeout bounds the wait for each component's readiness, for the
	// Node to become Ready and for its not-ready taint to go.
	StartTimeout time.Duration
	// StopTimeout is how long Down waits after SIGTERM before SIGKILL.
	StopTimeout time.Duration
	// PodDeleteTimeout bounds how long Down waits for pods to terminate
	// before it deletes the rest with grace period 0.
	PodDeleteTimeout time.Duration

	// nodeIndex narrows the config to one node (Config.node); 0 is the
	// whole cluster, whose node paths are node 1's.
	nodeIndex int
}

// DefaultConfig returns the configuration of docs/architecture.md: state in
// ${XDG_STATE_HOME:-$HOME/.local/state}/drakit/cluster, the kubelet root dirs
// mounted in /run/drakit, components and images in
// ${XDG_CACHE_HOME:-$HOME/.cache}/drakit, the ports of local-cluster.md §9.2.
func DefaultConfig() Config {
	home, _ := os.UserHomeDir()
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		state = filepath.Join(home, ".local", "state")
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		cache = filepath.Join(home, ".cache")
	}
	return Config{
		RunDir:                filepath.Join(state, "drakit", "cluster"),
		ComponentsDir:         filepath.Join(cache, "drakit", "components"),
		ImagesDir:             filepath.Join(cache, "drakit", "images"),
		KubernetesVersion:     "v1.37.2",
		EtcdVersion:           "v3.7.0",
		ContainerdVersion:     "v2.4.2",
		CrictlVersion:         "v1.37.0",
		NodeName:              "127.0.0.1",
		ServiceCIDR:           "10.0.0.0/24",
		CgroupRoot:            "/drakit-kubelet",
		KubeletRootBase:       "/run/drakit",
		Nodes:                 1,
		APIServerPort:         6443,
		EtcdClientPort:        23790,
		EtcdPeerPort:          23800,
		EtcdMetricsPort:       23810,
		ControllerManagerPort: 10257,
		SchedulerPort:         10259,
		KubeletPort:           10250,
		KubeletHealthzPort:    10248,
		FeatureGates:          DefaultFeatureGates,
		RuntimeConfig:         DefaultRuntimeConfig,
		Verbosity:             2,
		StartTimeout:          90 * time.Second,
		StopTimeout:           15 * time.Second,
		PodDeleteTimeout:      60 * time.Second,
	}
}

var (
	cgroupRootPattern = regexp.MustCompile(`^/[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	gateNamePattern   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
	apiVersionPattern = regexp.MustCompile(`^(?:[a-z0-9.-]+/)?v[0-9]+(?:(?:alpha|beta)[0-9]+)?$|^api/all$`)
)

// Validate checks every field and names the first bad one.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	for _, p := range []struct{ field, value string }{
		{"RunDir", c.RunDir}, {"ComponentsDir", c.ComponentsDir}, {"ImagesDir", c.ImagesDir},
		{"KubeletRootBase", c.KubeletRootBase},
	} {
		if !filepath.IsAbs(p.value) || filepath.Clean(p.value) != p.value || p.value == "/" {
			return bad(p.field, "%q must be an absolute, clean path other than /", p.value)
		}
		if strings.IndexFunc(p.value, unicode.IsControl) >= 0 {
			return bad(p.field, "%q contains a control character", p.value)
		}
	}
	if p := c.EmulatorNRIPlugin; p != "" && (!filepath.IsAbs(p) || filepath.Clean(p) != p || strings.IndexFunc(p, unicode.IsControl) >= 0) {
		return bad("EmulatorNRIPlugin", "%q must be an absolute, clean path (the drakit executable) or empty", p)
	}
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		return bad("Nodes", "%d is outside 1..%d", c.Nodes, MaxNodes)
	}
	// The last node's paths are the longest.
	last := c.node(c.Nodes)
	if sock := ContainerdSocket(last) + ".ttrpc"; len(sock) > maxSocketPath {
		return bad("RunDir", "%q is %d bytes too long: node %d's containerd socket %s is %d bytes, over the %d-byte unix socket limit",
			c.RunDir, len(sock)-maxSocketPath, c.Nodes, sock, len(sock), maxSocketPath)
	}
	if isUnder(c.KubeletRootBase, c.RunDir) || isUnder(c.RunDir, c.KubeletRootBase) {
		return bad("KubeletRootBase", "%q must neither contain RunDir %q nor lie inside it: it holds the mount points of RunDir's kubelet root dirs", c.KubeletRootBase, c.RunDir)
	}
	if sock := PerPodDRASocket(KubeletRootDir(last), strings.Repeat("d", DriverNameReserve), podUIDPlaceholder); len(sock) > maxSocketPath {
		return bad("KubeletRootBase", "%q is %d bytes too long: node %d's per-pod DRA socket for a %d-byte driver name, %s, is %d bytes, over the %d-byte unix socket limit",
			c.KubeletRootBase, len(sock)-maxSocketPath, c.Nodes, DriverNameReserve, sock, len(sock), maxSocketPath)
	}
	if strings.HasPrefix(c.ComponentsDir+"/", c.RunDir+"/") || strings.HasPrefix(c.ImagesDir+"/", c.RunDir+"/") {
		return bad("RunDir", "%q must not contain ComponentsDir or ImagesDir: Down removes RunDir", c.RunDir)
	}
	for _, v := range []struct{ field, value string }{
		{"KubernetesVersion", c.KubernetesVersion}, {"EtcdVersion", c.EtcdVersion},
		{"ContainerdVersion", c.ContainerdVersion}, {"CrictlVersion", c.CrictlVersion},
	} {
		if !strings.HasPrefix(v.value, "v") || strings.ContainsAny(v.value, "/ ") || len(v.value) < 2 {
			return bad(v.field, "%q is not a version like v1.2.3", v.value)
		}
	}
	ip, err := netip.ParseAddr(c.NodeName)
	if err != nil || !ip.Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(ip) {
		return bad("NodeName", "%q must be an IPv4 literal in 127.0.0.0/8", c.NodeName)
	}
	if lastIP, err := netip.ParseAddr(nodeName(last)); err != nil || !netip.MustParsePrefix("127.0.0.0/8").Contains(lastIP) {
		return bad("NodeName", "%q: node %d would be %s, outside 127.0.0.0/8", c.NodeName, c.Nodes, nodeName(last))
	}
	if _, err := firstServiceIP(c.ServiceCIDR); err != nil {
		return bad("ServiceCIDR", "%v", err)
	}
	if !cgroupRootPattern.MatchString(c.CgroupRoot) {
		return bad("CgroupRoot", "%q must be one top-level cgroup like /drakit-kubelet", c.CgroupRoot)
	}
	ports := map[int]string{}
	for _, p := range c.ports() {
		if p.port < 1 || p.port > 65535 {
			return bad(p.field, "%d is not a TCP port", p.port)
		}
		if other, dup := ports[p.port]; dup {
			return bad(p.field, "port %d is also %s", p.port, other)
		}
		ports[p.port] = p.field
	}
	if _, err := parseFeatureGates(c.FeatureGates); err != nil {
		return bad("FeatureGates", "%v", err)
	}
	if err := validateRuntimeConfig(c.RuntimeConfig); err != nil {
		return bad("RuntimeConfig", "%v", err)
	}
	if c.Verbosity < 0 || c.Verbosity > 10 {
		return bad("Verbosity", "%d is outside 0..10", c.Verbosity)
	}
	for _, d := range []struct {
		field string
		value time.Duration
	}{{"StartTimeout", c.StartTimeout}, {"StopTimeout", c.StopTimeout}, {"PodDeleteTimeout", c.PodDeleteTimeout}} {
		if d.value <= 0 {
			return bad(d.field, "%v must be positive", d.value)
		}
	}
	return nil
}

type namedPort struct {
	field string
	port  int
}

func (c Config) ports() []namedPort {
	return []namedPort{
		{"APIServerPort", c.APIServerPort}, {"EtcdClientPort", c.EtcdClientPort}, {"EtcdPeerPort", c.EtcdPeerPort},
		{"EtcdMetricsPort", c.EtcdMetricsPort}, {"ControllerManagerPort", c.ControllerManagerPort},
		{"SchedulerPort", c.SchedulerPort}, {"KubeletPort", c.KubeletPort}, {"KubeletHealthzPort", c.KubeletHealthzPort},
	}
}

// firstServiceIP returns the first host address of an IPv4 service range,
// the ClusterIP of the kubernetes Service, which the apiserver certificate
// names.
func firstServiceIP(cidr string) (netip.Addr, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not a CIDR: %w", cidr, err)
	}
	if !p.Addr().Is4() || p.Bits() > 30 || p.Masked() != p {
		return netip.Addr{}, fmt.Errorf("%q must be an IPv4 network (like 10.0.0.0/24) with room for addresses", cidr)
	}
	return p.Addr().Next(), nil
}

// parseFeatureGates parses Name=bool pairs into a map.
func parseFeatureGates(s string) (map[string]bool, error) {
	gates := map[string]bool{}
	if s == "" {
		return gates, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || !gateNamePattern.MatchString(name) {
			return nil, fmt.Errorf("%q is not Name=true|false", kv)
		}
		b, err := strconv.ParseBool(value)
		if err != nil {
			return nil, fmt.Errorf("gate %s: value %q is not a boolean", name, value)
		}
		if _, dup := gates[name]; dup {
			return nil, fmt.Errorf("gate %s is given twice", name)
		}
		gates[name] = b
	}
	return gates, nil
}

func validateRuntimeConfig(s string) error {
	if s == "" {
		return nil
	}
	for _, kv := range strings.Split(s, ",") {
		gv, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || !apiVersionPattern.MatchString(gv) {
			return fmt.Errorf("%q is not group/version=true|false", kv)
		}
		if _, err := strconv.ParseBool(value); err != nil {
			return fmt.Errorf("%s: value %q is not a boolean", gv, value)
		}
	}
	return nil
}
