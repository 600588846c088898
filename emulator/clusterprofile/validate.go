package clusterprofile

import (
	"fmt"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/internal/tpuhw"
)

// Limits of a cluster profile.
const (
	// MaxNodes bounds the cluster's node count.
	MaxNodes = 10000
)

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Default fills unset fields in place: apiVersion and kind, and a node
// group's count from its names. It is idempotent.
func (cp *ClusterProfile) Default() {
	if cp.APIVersion == "" {
		cp.APIVersion = APIVersion
	}
	if cp.Kind == "" {
		cp.Kind = Kind
	}
	for i := range cp.Spec.NodeGroups {
		g := &cp.Spec.NodeGroups[i]
		if g.Count == 0 && len(g.Names) > 0 {
			g.Count = len(g.Names)
		}
	}
}

// node is one node as the groups name it, with the field it comes from.
type node struct {
	name  string
	group int
	index int // in its group
	path  *field.Path
}

// nodeName is node i of group g: names[i], or <prefix><i> zero-padded.
func (g *NodeGroup) nodeName(i int) string {
	if len(g.Names) > 0 {
		return g.Names[i]
	}
	width := len(strconv.Itoa(g.Count - 1))
	return fmt.Sprintf("%s%0*d", g.NamePrefix, width, i)
}

// rackOf is the rack of node i of group g; "" for none.
func (g *NodeGroup) rackOf(i int) string {
	if g.Racks == nil {
		return g.Rack
	}
	per := max(g.Racks.NodesPerRack, 1)
	width := len(strconv.Itoa((g.Count - 1) / per))
	return fmt.Sprintf("%s%0*d", g.Racks.Prefix, width, i/per)
}

// Validate checks a defaulted cluster profile on its own, without its node
// profiles (Resolve checks those), and returns every problem with its field
// path.
func (cp *ClusterProfile) Validate() field.ErrorList {
	var errs field.ErrorList
	if cp.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), cp.APIVersion, []string{APIVersion}))
	}
	if cp.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), cp.Kind, []string{Kind}))
	}
	errs = append(errs, validateLabel(field.NewPath("metadata", "name"), cp.Metadata.Name)...)
	spec := field.NewPath("spec")
	nodes, groups, gerrs := cp.validateGroups(spec.Child("nodeGroups"))
	errs = append(errs, gerrs...)
	errs = append(errs, cp.validateDomains(spec.Child("nvlinkDomains"), nodes, groups)...)
	errs = append(errs, cp.validateSlices(spec.Child("tpuSlices"), nodes, groups)...)
	return errs
}

// validateGroups checks the node groups and returns the nodes by name and
// the groups' indexes by name.
func (cp *ClusterProfile) validateGroups(path *field.Path) (map[string]node, map[string]int, field.ErrorList) {
	var errs field.ErrorList
	nodes := map[string]node{}
	groups := map[string]int{}
	if len(cp.Spec.NodeGroups) == 0 {
		errs = append(errs, field.Required(path, "at least one node group"))
	}
	total := 0
	for i := range cp.Spec.NodeGroups {
		g := &cp.Spec.NodeGroups[i]
		p := path.Index(i)
		errs = append(errs, validateLabel(p.Child("name"), g.Name)...)
		if first, ok := groups[g.Name]; ok && g.Name != "" {
			errs = append(errs, duplicate(p.Child("name"), g.Name, path.Index(first).Child("name")))
		} else {
			groups[g.Name] = i
		}
		if g.NodeProfile == "" {
			errs = append(errs, field.Required(p.Child("nodeProfile"), "a built-in node profile name or a file path"))
		}
		switch {
		case g.NamePrefix != "" && len(g.Names) > 0:
			errs = append(errs, field.Forbidden(p.Child("names"), "namePrefix and names are exclusive"))
			continue
		case g.NamePrefix == "" && len(g.Names) == 0:
			errs = append(errs, field.Required(p.Child("namePrefix"), "or names"))
			continue
		case len(g.Names) > 0 && g.Count != len(g.Names):
			errs = append(errs, field.Invalid(p.Child("count"), g.Count, fmt.Sprintf("must equal the %d names (or be left out)", len(g.Names))))
			continue
		case g.Count < 1 || g.Count > MaxNodes:
			errs = append(errs, field.Invalid(p.Child("count"), g.Count, fmt.Sprintf("must be between 1 and %d", MaxNodes)))
			continue
		}
		if total += g.Count; total > MaxNodes {
			errs = append(errs, field.TooMany(path, total, MaxNodes))
			return nodes, groups, errs
		}
		if g.Rack != "" && g.Racks != nil {
			errs = append(errs, field.Forbidden(p.Child("racks"), "rack and racks are exclusive"))
		}
		if g.Rack != "" {
			errs = append(errs, validateLabel(p.Child("rack"), g.Rack)...)
		}
		if g.Racks != nil {
			if g.Racks.NodesPerRack < 1 {
				errs = append(errs, field.Invalid(p.Child("racks", "nodesPerRack"), g.Racks.NodesPerRack, "must be positive"))
			} else {
				errs = append(errs, validateLabel(p.Child("racks", "prefix"), g.rackOf(g.Count-1))...)
			}
		}
		for j := range g.Count {
			name := g.nodeName(j)
			np := p.Child("names").Index(j)
			if len(g.Names) == 0 {
				np = p.Child("namePrefix")
			}
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(np, name, "node name: "+msg))
			}
			if first, ok := nodes[name]; ok {
				errs = append(errs, duplicate(np, name, first.path))
				continue
			}
			nodes[name] = node{name: name, group: i, index: j, path: np}
		}
	}
	return nodes, groups, errs
}

// members lists the nodes of groups, then nodes, reporting unknown ones.
func (cp *ClusterProfile) members(path *field.Path, groupNames, nodeNames []string, nodes map[string]node, groups map[string]int) ([]string, field.ErrorList) {
	var out []string
	var errs field.ErrorList
	for k, name := range groupNames {
		i, ok := groups[name]
		if !ok {
			errs = append(errs, field.NotFound(path.Child("nodeGroups").Index(k), name))
			continue
		}
		g := &cp.Spec.NodeGroups[i]
		if len(g.Names) == 0 && g.NamePrefix == "" {
			continue // reported with the group
		}
		for j := range g.Count {
			out = append(out, g.nodeName(j))
		}
	}
	for k, name := range nodeNames {
		if _, ok := nodes[name]; !ok {
			errs = append(errs, field.NotFound(path.Child("nodes").Index(k), name))
			continue
		}
		out = append(out, name)
	}
	return out, errs
}

func (cp *ClusterProfile) validateDomains(path *field.Path, nodes map[string]node, groups map[string]int) field.ErrorList {
	var errs field.ErrorList
	names, uuids := map[string]int{}, map[string]int{}
	inClique := map[string]*field.Path{}
	for i := range cp.Spec.NVLinkDomains {
		d := &cp.Spec.NVLinkDomains[i]
		p := path.Index(i)
		errs = append(errs, validateLabel(p.Child("name"), d.Name)...)
		if first, ok := names[d.Name]; ok && d.Name != "" {
			errs = append(errs, duplicate(p.Child("name"), d.Name, path.Index(first).Child("name")))
		} else {
			names[d.Name] = i
		}
		switch first, seen := uuids[d.ClusterUUID]; {
		case !uuidPattern.MatchString(d.ClusterUUID):
			errs = append(errs, field.Invalid(p.Child("clusterUUID"), d.ClusterUUID, "must be a lower-case UUID (8-4-4-4-12 hex digits)"))
		case seen:
			errs = append(errs, duplicate(p.Child("clusterUUID"), d.ClusterUUID, path.Index(first).Child("clusterUUID")))
		default:
			uuids[d.ClusterUUID] = i
		}
		if len(d.Cliques) == 0 {
			errs = append(errs, field.Required(p.Child("cliques"), "at least one clique"))
		}
		ids := map[uint32]*field.Path{}
		for j := range d.Cliques {
			c := &d.Cliques[j]
			cpath := p.Child("cliques").Index(j)
			members, merrs := cp.members(cpath, c.NodeGroups, c.Nodes, nodes, groups)
			errs = append(errs, merrs...)
			if len(c.NodeGroups)+len(c.Nodes) == 0 {
				errs = append(errs, field.Required(cpath.Child("nodes"), "or nodeGroups: a clique needs members"))
			}
			for _, m := range members {
				if first, ok := inClique[m]; ok {
					errs = append(errs, withDetail(field.Duplicate(cpath, m), fmt.Sprintf("node %s is also in %s", m, first)))
					continue
				}
				inClique[m] = cpath
			}
			cliques := 1
			if c.NodesPerClique < 0 {
				errs = append(errs, field.Invalid(cpath.Child("nodesPerClique"), c.NodesPerClique, "must not be negative"))
			} else if c.NodesPerClique > 0 && len(merrs) == 0 {
				if len(members)%c.NodesPerClique != 0 {
					errs = append(errs, field.Invalid(cpath.Child("nodesPerClique"), c.NodesPerClique,
						fmt.Sprintf("must divide the clique's %d members", len(members))))
				}
				cliques = max(1, len(members)/c.NodesPerClique)
			}
			for k := range cliques {
				id := c.ID + uint32(k)
				if first, ok := ids[id]; ok {
					errs = append(errs, withDetail(field.Duplicate(cpath.Child("id"), id), "clique ID also used by "+first.String()))
					break
				}
				ids[id] = cpath
			}
		}
	}
	return errs
}

func (cp *ClusterProfile) validateSlices(path *field.Path, nodes map[string]node, groups map[string]int) field.ErrorList {
	var errs field.ErrorList
	names := map[string]int{}
	inSlice := map[string]*field.Path{}
	for i := range cp.Spec.TPUSlices {
		s := &cp.Spec.TPUSlices[i]
		p := path.Index(i)
		errs = append(errs, validateLabel(p.Child("name"), s.Name)...)
		if first, ok := names[s.Name]; ok && s.Name != "" {
			errs = append(errs, duplicate(p.Child("name"), s.Name, path.Index(first).Child("name")))
		} else {
			names[s.Name] = i
		}
		if _, ok := tpuhw.LookupGeneration(s.Generation); !ok {
			errs = append(errs, field.NotSupported(p.Child("generation"), s.Generation, tpuhw.GenerationNames()))
		}
		topo, terr := tpuhw.ParseBounds(s.Topology)
		if terr != nil {
			errs = append(errs, field.Invalid(p.Child("topology"), s.Topology, terr.Error()))
		}
		bounds, berr := tpuhw.ParseBounds(s.ChipBounds)
		if berr != nil {
			errs = append(errs, field.Invalid(p.Child("chipBounds"), s.ChipBounds, berr.Error()))
		}
		hp := p.Child("hosts")
		var groupNames []string
		switch {
		case s.Hosts.NodeGroup != "" && len(s.Hosts.Nodes) > 0:
			errs = append(errs, field.Forbidden(hp.Child("nodes"), "nodeGroup and nodes are exclusive"))
			continue
		case s.Hosts.NodeGroup == "" && len(s.Hosts.Nodes) == 0:
			errs = append(errs, field.Required(hp.Child("nodeGroup"), "or nodes"))
			continue
		case s.Hosts.NodeGroup != "":
			groupNames = []string{s.Hosts.NodeGroup}
		}
		hosts, herrs := cp.members(hp, groupNames, s.Hosts.Nodes, nodes, groups)
		if s.Hosts.NodeGroup != "" {
			for _, e := range herrs { // members names the list; here it is one field
				e.Field = hp.Child("nodeGroup").String()
			}
		}
		errs = append(errs, herrs...)
		for _, h := range hosts {
			if first, ok := inSlice[h]; ok {
				errs = append(errs, withDetail(field.Duplicate(hp, h), fmt.Sprintf("host %s is also in %s", h, first)))
				continue
			}
			inSlice[h] = p
		}
		if terr != nil || berr != nil || len(herrs) > 0 {
			continue
		}
		geometry, err := tpuhw.NewSlice(topo, bounds)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("chipBounds"), s.ChipBounds, "hosts of this box do not tile the topology "+s.Topology))
			continue
		}
		if want := geometry.Hosts(); len(hosts) != want {
			errs = append(errs, field.Invalid(hp, len(hosts),
				fmt.Sprintf("hosts do not tile the topology: %s needs %d hosts of %s, not %d", s.Topology, want, s.ChipBounds, len(hosts))))
		}
	}
	return errs
}

func validateLabel(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

func duplicate(path *field.Path, value any, first *field.Path) *field.Error {
	return withDetail(field.Duplicate(path, value), "also "+first.String())
}

func withDetail(e *field.Error, detail string) *field.Error {
	e.Detail = detail
	return e
}
