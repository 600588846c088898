package clusterprofile

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/emulator/nvlink"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/tpu"
	"drakit.dev/drakit/internal/tpuhw"
)

// Cluster is a resolved cluster profile: every node with its hardware, and
// the cliques and slices over them.
type Cluster struct {
	// Name is the cluster profile's metadata.name.
	Name string
	// Nodes in the profile's order (groups, then each group's nodes).
	Nodes []Node
	// Cliques are every NVLink clique, domains in order, cliques in
	// order (NodesPerClique runs expanded).
	Cliques []ResolvedClique
	// Slices are the TPU slices in order.
	Slices []ResolvedSlice
}

// Node is one node of a cluster.
type Node struct {
	// Name is the node's name (the Kubernetes Node's).
	Name string
	// Group is its node group's name; Rack its rack ("" for none).
	Group, Rack string
	// Profile is the node's hardware, defaulted and validated, with
	// uuidSeed, spec.nvlink.domain and spec.tpu.slice set for this node.
	Profile *profile.Profile
}

// ResolvedClique is one NVLink clique.
type ResolvedClique struct {
	// Domain is the domain's name; ClusterUUID its UUID; ID the clique ID.
	Domain      string
	ClusterUUID string
	ID          uint32
	// Nodes are the clique's nodes, in member order.
	Nodes []string
}

// Identity is NVIDIA's node-level fabric identity "<clusterUUID>.<cliqueID>"
// (the GPU driver's nvlinkClique attribute).
func (c ResolvedClique) Identity() string { return fmt.Sprintf("%s.%d", c.ClusterUUID, c.ID) }

// ResolvedSlice is one TPU slice.
type ResolvedSlice struct {
	Name       string
	Generation string
	// Geometry is the slice's torus and its hosts' box of chips; worker w
	// is Hosts[w].
	Geometry tpuhw.Slice
	// Hosts in worker order.
	Hosts []string
}

// Node returns the node called name.
func (c *Cluster) Node(name string) (*Node, bool) {
	for i := range c.Nodes {
		if c.Nodes[i].Name == name {
			return &c.Nodes[i], true
		}
	}
	return nil, false
}

// Resolve loads every node group's node profile (once per group) and
// returns the cluster's nodes, each with its own profile: uuidSeed = the
// node's name, and the node's clique and slice set. Problems name their
// field: a node profile that is unknown, cannot be read or is invalid
// (spec.nodeGroups[i].nodeProfile), a clique member whose node profile has
// no spec.nvlink, a slice host without spec.tpu or with another generation
// or chipBounds. A per-node profile that fails validation after the
// changes is reported with the node's name.
func Resolve(src *Source) (*Cluster, error) {
	cp := src.Profile
	c := &Cluster{Name: cp.Metadata.Name}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	templates := make([]*profile.Profile, len(cp.Spec.NodeGroups))
	for i := range cp.Spec.NodeGroups {
		g := &cp.Spec.NodeGroups[i]
		ref := g.NodeProfile
		if src.Dir != "" && !filepath.IsAbs(ref) && isFilePath(ref) {
			ref = filepath.Join(src.Dir, ref)
		}
		p, _, err := profile.Read(ref)
		if err != nil {
			errs = append(errs, field.Invalid(spec.Child("nodeGroups").Index(i).Child("nodeProfile"), g.NodeProfile, err.Error()))
			continue
		}
		// Validate the template once, so that its own problems are
		// reported once, against the group, not for every node.
		check, err := clone(p)
		if err != nil {
			return nil, fmt.Errorf("%s: node group %s: %w", src.Name, g.Name, err)
		}
		check.Default()
		if verrs := check.Validate(); len(verrs) > 0 {
			errs = append(errs, field.Invalid(spec.Child("nodeGroups").Index(i).Child("nodeProfile"), g.NodeProfile,
				profile.NewValidationError("node profile", verrs).Error()))
			continue
		}
		templates[i] = p
	}
	nodes, groups, _ := cp.validateGroups(spec.Child("nodeGroups")) // validated by Load
	nodeIndex := map[string]int{}
	for i := range cp.Spec.NodeGroups {
		g := &cp.Spec.NodeGroups[i]
		for j := range g.Count {
			name := g.nodeName(j)
			nodeIndex[name] = len(c.Nodes)
			c.Nodes = append(c.Nodes, Node{Name: name, Group: g.Name, Rack: g.rackOf(j)})
		}
	}
	groupOf := func(name string) int { return nodes[name].group }
	domains := make([]*nvlink.Domain, len(c.Nodes))
	for i := range cp.Spec.NVLinkDomains {
		d := &cp.Spec.NVLinkDomains[i]
		for j := range d.Cliques {
			cl := &d.Cliques[j]
			path := spec.Child("nvlinkDomains").Index(i).Child("cliques").Index(j)
			members, _ := cp.members(path, cl.NodeGroups, cl.Nodes, nodes, groups) // validated by Load
			per := len(members)
			if cl.NodesPerClique > 0 {
				per = cl.NodesPerClique
			}
			for k := 0; k < len(members); k += per {
				rc := ResolvedClique{Domain: d.Name, ClusterUUID: d.ClusterUUID, ID: cl.ID + uint32(k/per), Nodes: members[k : k+per]}
				c.Cliques = append(c.Cliques, rc)
				for _, m := range rc.Nodes {
					if t := templates[groupOf(m)]; t != nil && t.Spec.NVLink == nil {
						errs = append(errs, withDetail(field.Invalid(path, m, "node has no NVLink fabric"),
							fmt.Sprintf("node %s: node profile %s has no spec.nvlink", m, cp.Spec.NodeGroups[groupOf(m)].NodeProfile)))
					}
					domains[nodeIndex[m]] = &nvlink.Domain{ClusterUUID: d.ClusterUUID, CliqueID: rc.ID}
				}
			}
		}
	}
	hosts := make([]*tpu.Slice, len(c.Nodes))
	for i := range cp.Spec.TPUSlices {
		s := &cp.Spec.TPUSlices[i]
		path := spec.Child("tpuSlices").Index(i)
		var groupNames []string
		if s.Hosts.NodeGroup != "" {
			groupNames = []string{s.Hosts.NodeGroup}
		}
		members, _ := cp.members(path.Child("hosts"), groupNames, s.Hosts.Nodes, nodes, groups)
		topo, _ := tpuhw.ParseBounds(s.Topology) // validated
		bounds, _ := tpuhw.ParseBounds(s.ChipBounds)
		geometry, _ := tpuhw.NewSlice(topo, bounds)
		c.Slices = append(c.Slices, ResolvedSlice{Name: s.Name, Generation: s.Generation, Geometry: geometry, Hosts: members})
		for w, h := range members {
			g := groupOf(h)
			if t := templates[g]; t != nil {
				switch {
				case t.Spec.TPU == nil:
					errs = append(errs, withDetail(field.Invalid(path.Child("hosts"), h, "host has no TPU chips"),
						fmt.Sprintf("node %s: node profile %s has no spec.tpu", h, cp.Spec.NodeGroups[g].NodeProfile)))
				case t.Spec.TPU.Generation != s.Generation:
					errs = append(errs, field.Invalid(path.Child("generation"), s.Generation,
						fmt.Sprintf("host %s has generation %q (node profile %s)", h, t.Spec.TPU.Generation, cp.Spec.NodeGroups[g].NodeProfile)))
				case !sameBounds(t.Spec.TPU.ChipBounds, bounds):
					errs = append(errs, field.Invalid(path.Child("chipBounds"), s.ChipBounds,
						fmt.Sprintf("host %s has chipBounds %q (node profile %s)", h, t.Spec.TPU.ChipBounds, cp.Spec.NodeGroups[g].NodeProfile)))
				}
			}
			hosts[nodeIndex[h]] = &tpu.Slice{Name: s.Name, Topology: s.Topology, WorkerID: w}
		}
	}
	if len(errs) > 0 {
		return nil, newValidationError(src.Name, dedupe(errs))
	}
	var nodeErrs []error
	for i := range c.Nodes {
		n := &c.Nodes[i]
		p, err := clone(templates[groupOf(n.Name)])
		if err != nil {
			return nil, fmt.Errorf("%s: node %s: %w", src.Name, n.Name, err)
		}
		p.Spec.UUIDSeed = n.Name
		if domains[i] != nil {
			p.Spec.NVLink.Domain = domains[i]
		}
		if hosts[i] != nil {
			p.Spec.TPU.Slice = hosts[i]
		}
		p.Default()
		if verrs := p.Validate(); len(verrs) > 0 {
			nodeErrs = append(nodeErrs, profile.NewValidationError("node "+n.Name, verrs))
			continue
		}
		n.Profile = p
	}
	if err := errors.Join(nodeErrs...); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", src.Name, ErrInvalid, err)
	}
	return c, nil
}

// isFilePath tells a node profile file from a built-in name, as
// profile.Load does.
func isFilePath(ref string) bool {
	return filepath.Base(ref) != ref || filepath.Ext(ref) == ".yaml" || filepath.Ext(ref) == ".yml"
}

// dedupe drops repeated identical errors (a group's problem found once per
// node).
func dedupe(errs field.ErrorList) field.ErrorList {
	seen := map[string]bool{}
	var out field.ErrorList
	for _, e := range errs {
		if k := e.Error(); !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

// clone deep-copies a profile through its JSON form.
func clone(p *profile.Profile) (*profile.Profile, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("copy node profile %s: %w", p.Metadata.Name, err)
	}
	out := &profile.Profile{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("copy node profile %s: %w", p.Metadata.Name, err)
	}
	return out, nil
}

// sameBounds reports whether s (a validated node profile's chipBounds,
// "XxYxZ" or "XxY") is b.
func sameBounds(s string, b tpuhw.Bounds) bool {
	got, err := tpuhw.ParseBounds(s)
	return err == nil && got == b
}
