// Package clusterprofile describes an emulated cluster: which nodes exist,
// the node profile (package emulator/profile) each one renders, its rack,
// and the fabrics that span nodes — multi-node NVLink domains with their
// cliques, and multi-host TPU slices with their hosts in order.
//
// A ClusterProfile is a strict versioned YAML document (apiVersion
// emulator.drakit.dev/v1alpha1, kind ClusterProfile) read through
// internal/strictyaml. Parse decodes it, Default fills unset fields,
// Validate checks it on its own (names, membership, tiling) and returns
// every problem with its field path. Resolve then loads each node group's
// node profile and returns, per node, a defaulted and validated
// profile.Profile with:
//
//   - spec.uuidSeed = the node's name, so GPU UUIDs and NIC MACs differ per
//     node (an explicit uuid in the node profile is kept, and then repeats);
//   - spec.nvlink.domain = {clusterUUID, cliqueID} for a node of a clique
//     (the node profile must have spec.nvlink);
//   - spec.tpu.slice = {name, topology, workerID} for a host of a TPU slice
//     (the node profile must have spec.tpu with the slice's generation and
//     chipBounds); workerID is the host's index in the slice's host list and
//     hosts tile the torus in x, then y, then z order (tpuhw.Slice, the one
//     home of torus geometry; this package has none of its own).
//
// Node groups name their nodes explicitly (names) or as
// <namePrefix><index>, index from 0, zero-padded to the width of count-1.
// A node profile is a built-in name or a file path; a relative path is
// relative to the cluster profile file's directory. Errors wrap ErrInvalid
// (content) or ErrNotFound (unknown built-in cluster profile).
//
// Builtins: conformance-fabric (the four local-cluster nodes
// 127.0.0.1..127.0.0.4 of the fabric contract), nvl72, tpu-v5p-4x4x4 and
// scale-1000 (see each file's comment).
package clusterprofile
