package simulate

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"drakit.dev/drakit/reference/driver"
)

// Simulation defaults.
const (
	DefaultProfile    = "dgx-h100"
	DefaultNodes      = 1000
	DefaultNodePrefix = "drakit-sim-"
	DefaultTimeout    = 10 * time.Minute
	// DefaultQPS and DefaultBurst are client-go's
	// defaults, which the reference driver runs with.
	DefaultQPS   = 5
	DefaultBurst = 10
	// MaxNodes bounds Config.Nodes.
	MaxNodes = 10000
)

// ErrInvalidConfig classifies every error returned by
// Config.Validate.
var ErrInvalidConfig = errors.New("invalid simulation configuration")

// Config configures Run: the reference driver's ResourceSlice publisher
// run for many simulated nodes at once, against a real API server.
type Config struct {
	// DriverName is the DRA driver the slices are published for. Default
	// gpu.drakit.dev.
	DriverName string
	// Profile is every simulated node's hardware: a built-in emulator
	// profile (dgx-h100, mixed-mig) or the path of a profile file. Default
	// dgx-h100.
	Profile string
	// ClusterProfile, when set, replaces Profile, Nodes and NodePrefix: the
	// simulated nodes are those of this cluster profile (a built-in name or
	// a file, package emulator/clusterprofile), each with its own hardware,
	// and the pools include the fabric contract's: NVLink attributes on the
	// GPUs of a clique's nodes, each clique's IMEX channel pool, each TPU
	// host's chips and each TPU slice's sub-slice pool (TPUDriverName).
	ClusterProfile string
	// GPUsPerNode, when positive, replicates the profile's GPUs to exactly
	// this many per node (ReplicateProfileGPUs); 0 keeps the profile's GPUs.
	GPUsPerNode int
	// Nodes is how many nodes are simulated, 1 to MaxNodes.
	// Default 1000.
	Nodes int
	// NodePrefix names the simulated nodes <NodePrefix><i>, i counting from
	// 0, zero-padded to the width of Nodes-1. No Node of the cluster may have
	// one of these names. Default drakit-sim-.
	NodePrefix string
	// PartitionableAlpha publishes the alpha fields of partitionable
	// devices, as driver.Config.PartitionableAlpha does. Default false.
	PartitionableAlpha bool
	// Keep leaves the published slices in the cluster; otherwise Run
	// deletes them through the publishers before it returns. A later run
	// with the same NodePrefix and Nodes takes kept slices over (and,
	// without Keep, deletes them). Default false.
	Keep bool
	// Timeout bounds publishing, and deleting, each. Default 10m.
	Timeout time.Duration
	// Kubeconfig is the path of a kubeconfig file; empty means $KUBECONFIG
	// or ~/.kube/config.
	Kubeconfig string
	// KubeContext is the kubeconfig's context to use; empty: its
	// current-context. As kubectl's --context.
	KubeContext string
	// RequestTimeout bounds every request of the publishers' clients,
	// watches included, as kubectl's --request-timeout; 0: no bound.
	RequestTimeout time.Duration
	// QPS and Burst are the client-side rate limit of each simulated
	// node's publisher, which has its own client as each kubelet plugin
	// does. Defaults 5 and 10 (client-go's, the reference driver's).
	QPS   int
	Burst int
}

// DefaultConfig returns the defaults: 1000 dgx-h100 nodes of the
// reference driver.
func DefaultConfig() Config {
	return Config{
		DriverName: driver.DefaultDriverName,
		Profile:    DefaultProfile,
		Nodes:      DefaultNodes,
		NodePrefix: DefaultNodePrefix,
		Timeout:    DefaultTimeout,
		QPS:        DefaultQPS,
		Burst:      DefaultBurst,
	}
}

// Validate reports the first invalid field by name.
func (c *Config) Validate() error {
	if msgs := validation.IsDNS1123Subdomain(c.DriverName); len(msgs) > 0 || len(c.DriverName) > 63 {
		return fmt.Errorf("%w: DriverName %q is not a DNS subdomain of at most 63 characters", ErrInvalidConfig, c.DriverName)
	}
	if c.ClusterProfile != "" {
		if c.GPUsPerNode != 0 {
			return fmt.Errorf("%w: GPUsPerNode does not go with ClusterProfile", ErrInvalidConfig)
		}
		return c.validateCommon()
	}
	if c.Profile == "" {
		return fmt.Errorf("%w: Profile is required", ErrInvalidConfig)
	}
	if c.GPUsPerNode < 0 {
		return fmt.Errorf("%w: GPUsPerNode %d is negative", ErrInvalidConfig, c.GPUsPerNode)
	}
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		return fmt.Errorf("%w: Nodes %d is not between 1 and %d", ErrInvalidConfig, c.Nodes, MaxNodes)
	}
	// Node and pool names are DNS subdomains; the longest name has the
	// same length as the last one.
	if last := c.nodeName(c.Nodes - 1); len(validation.IsDNS1123Subdomain(last)) > 0 || len(validation.IsDNS1123Subdomain(c.nodeName(0))) > 0 {
		return fmt.Errorf("%w: NodePrefix %q does not make DNS subdomains (e.g. %q)", ErrInvalidConfig, c.NodePrefix, last)
	}
	return c.validateCommon()
}

// validateCommon checks the fields both kinds of simulation use.
func (c *Config) validateCommon() error {
	if c.Timeout <= 0 {
		return fmt.Errorf("%w: Timeout %s is not positive", ErrInvalidConfig, c.Timeout)
	}
	if c.RequestTimeout < 0 {
		return fmt.Errorf("%w: RequestTimeout %s is negative (0: no limit)", ErrInvalidConfig, c.RequestTimeout)
	}
	if c.QPS < 1 || c.Burst < 1 {
		return fmt.Errorf("%w: QPS %d and Burst %d must be positive", ErrInvalidConfig, c.QPS, c.Burst)
	}
	return nil
}

// nodeName is the name of simulated node i.
func (c *Config) nodeName(i int) string {
	width := len(strconv.Itoa(c.Nodes - 1))
	return fmt.Sprintf("%s%0*d", c.NodePrefix, width, i)
}

// Result is what Run measured.
type Result struct {
	// Nodes is the number of simulated nodes; SlicesPerNode and
	// DevicesPerNode describe each node's pool (the first node's, with a
	// cluster profile, whose nodes differ).
	Nodes, SlicesPerNode, DevicesPerNode int
	// Pools, Slices and Devices count everything published, cluster-level
	// pools included.
	Pools, Slices, Devices int
	// Build is the time to build every node's pool; Start to start the
	// publishers; Publish from handing the pools to the publishers until
	// the API server holds every slice; Delete (zero with Keep) from
	// withdrawing the pools until the API server holds none.
	Build, Start, Publish, Delete time.Duration
	// Stats sums the publishers' API calls.
	Stats resourceslice.Stats
}
