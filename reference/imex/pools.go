package imex

import (
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/reference/driver"
)

// maxDevicesPerSlice is the API's limit of devices in one slice.
const maxDevicesPerSlice = 128

// Cliques maps each clique ("<cluster UUID>.<clique ID>") to the sorted
// names of its nodes, from the node-local slices of driverName among
// slices. A node belongs to the clique of its first device (in slice
// order) that has the nvlinkClique attribute.
func Cliques(driverName string, slices_ []resourceapi.ResourceSlice) map[string][]string {
	nodeClique := map[string]string{}
	for _, s := range slices_ {
		node := ptr.Deref(s.Spec.NodeName, "")
		if s.Spec.Driver != driverName || node == "" || nodeClique[node] != "" {
			continue
		}
		for _, d := range s.Spec.Devices {
			if c := cliqueOf(driverName, d); c != "" {
				nodeClique[node] = c
				break
			}
		}
	}
	out := map[string][]string{}
	for node, c := range nodeClique {
		out[c] = append(out[c], node)
	}
	for _, nodes := range out {
		slices.Sort(nodes)
	}
	return out
}

// cliqueOf is d's nvlinkClique attribute, written short or qualified.
func cliqueOf(driverName string, d resourceapi.Device) string {
	for _, name := range []resourceapi.QualifiedName{"nvlinkClique", resourceapi.QualifiedName(driverName + "/nvlinkClique")} {
		if a, ok := d.Attributes[name]; ok && a.StringValue != nil {
			return *a.StringValue
		}
	}
	return ""
}

// parseClique splits "<cluster UUID>.<clique ID>"; false for anything else.
func parseClique(c string) (driver.Fabric, bool) {
	uuid, id, ok := strings.Cut(c, ".")
	n, err := strconv.ParseUint(id, 10, 32)
	if !ok || err != nil || len(uuid) != 36 {
		return driver.Fabric{}, false
	}
	return driver.Fabric{ClusterUUID: uuid, CliqueID: uint32(n)}, true
}

// Resources is what the controller publishes for cliques: per clique a
// pool driver.IMEXPoolName with channels devices and a nodeSelector of its
// nodes (kubernetes.io/hostname In [nodes]: the local cluster's and
// kubeadm's nodes are labelled with their name). A clique whose name does not parse is left out.
func Resources(cliques map[string][]string, channels int) *resourceslice.DriverResources {
	res := &resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{}}
	for clique, nodes := range cliques {
		f, ok := parseClique(clique)
		if !ok {
			continue
		}
		// One term (a ResourceSlice allows no more), on the hostname label:
		// a field selector on metadata.name takes one value only.
		pool := resourceslice.Pool{NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: nodes}},
		}}}}
		var devs []resourceapi.Device
		for n := range channels {
			devs = append(devs, resourceapi.Device{
				Name: driver.IMEXChannelDeviceName(n),
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"type":         {StringValue: ptr.To("imex-channel")},
					"channel":      {IntValue: ptr.To(int64(n))},
					"nvlinkClique": {StringValue: ptr.To(clique)},
				},
			})
			if len(devs) == maxDevicesPerSlice || n == channels-1 {
				pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: devs})
				devs = nil
			}
		}
		res.Pools[driver.IMEXPoolName(f)] = pool
	}
	return res
}
