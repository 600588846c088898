package clusterprofile

// APIVersion and Kind identify a cluster profile document.
const (
	APIVersion = "emulator.drakit.dev/v1alpha1"
	Kind       = "ClusterProfile"
)

// ClusterProfile is an emulated cluster: its nodes and the fabrics between
// them.
type ClusterProfile struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata names the cluster profile.
type Metadata struct {
	// Name is a DNS label.
	Name string `json:"name"`
}

// Spec lists the node groups and the fabrics over their nodes.
type Spec struct {
	// NodeGroups are the cluster's nodes, group by group; the cluster's node
	// order is the groups' order, then each group's.
	NodeGroups []NodeGroup `json:"nodeGroups"`
	// NVLinkDomains are the multi-node NVLink domains.
	NVLinkDomains []NVLinkDomain `json:"nvlinkDomains,omitempty"`
	// TPUSlices are the multi-host TPU slices.
	TPUSlices []TPUSlice `json:"tpuSlices,omitempty"`
}

// NodeGroup is a set of nodes of one node profile.
type NodeGroup struct {
	// Name identifies the group (a DNS label); cliques and slices refer to
	// it.
	Name string `json:"name"`
	// NamePrefix names the group's nodes <namePrefix><index>; exclusive
	// with Names.
	NamePrefix string `json:"namePrefix,omitempty"`
	// Names lists the group's nodes explicitly; exclusive with NamePrefix.
	Names []string `json:"names,omitempty"`
	// Count is the number of nodes: required with NamePrefix; with Names it
	// defaults to len(Names) and must equal it.
	Count int `json:"count,omitempty"`
	// NodeProfile is every node's hardware: a built-in node profile name or
	// a file path (relative: to the cluster profile's directory).
	NodeProfile string `json:"nodeProfile"`
	// Rack puts every node of the group in one rack; exclusive with
	// Racks. Empty (and no Racks): the nodes have no rack.
	Rack string `json:"rack,omitempty"`
	// Racks splits the group into racks of NodesPerRack consecutive nodes.
	Racks *RackSplit `json:"racks,omitempty"`
}

// RackSplit puts every NodesPerRack consecutive nodes of a group in a rack
// named <prefix><rack index>, zero-padded to the width of the last index.
type RackSplit struct {
	Prefix       string `json:"prefix"`
	NodesPerRack int    `json:"nodesPerRack"`
}

// NVLinkDomain is one multi-node NVLink domain.
type NVLinkDomain struct {
	// Name identifies the domain in errors and listings.
	Name string `json:"name"`
	// ClusterUUID is the domain's UUID, lower-case RFC 4122 text.
	ClusterUUID string `json:"clusterUUID"`
	// Cliques are the domain's cliques; a node is in at most one clique of
	// all domains.
	Cliques []Clique `json:"cliques"`
}

// Clique is one clique of a domain, or with NodesPerClique a run of
// cliques.
type Clique struct {
	// ID is the clique ID (the first one with NodesPerClique; the next
	// cliques count up from it).
	ID uint32 `json:"id"`
	// NodeGroups and Nodes are the clique's members: every node of each
	// group, then the nodes named; at least one member.
	NodeGroups []string `json:"nodeGroups,omitempty"`
	Nodes      []string `json:"nodes,omitempty"`
	// NodesPerClique, when positive, splits the members into consecutive
	// cliques of this many nodes (IDs ID, ID+1, …); the member count must
	// be a multiple of it.
	NodesPerClique int `json:"nodesPerClique,omitempty"`
}

// TPUSlice is one multi-host TPU slice.
type TPUSlice struct {
	// Name is the slice's name (a DNS label): spec.tpu.slice.name of its
	// hosts.
	Name string `json:"name"`
	// Generation is the chip generation every host must have (v4, v5e,
	// v5p, v6e).
	Generation string `json:"generation"`
	// Topology is the slice's torus, XxYxZ (e.g. 4x4x4).
	Topology string `json:"topology"`
	// ChipBounds is each host's box of chips, XxYxZ (e.g. 2x2x1); it must
	// divide Topology, and the hosts' node profile must have it.
	ChipBounds string `json:"chipBounds"`
	// Hosts are the slice's hosts in worker order.
	Hosts SliceHosts `json:"hosts"`
}

// SliceHosts lists a slice's hosts: the nodes of NodeGroup in group order,
// or Nodes; exactly one of them.
type SliceHosts struct {
	NodeGroup string   `json:"nodeGroup,omitempty"`
	Nodes     []string `json:"nodes,omitempty"`
}
