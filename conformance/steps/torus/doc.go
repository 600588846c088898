// Package torus holds the steps of the TPU torus (features/tpu-torus) and
// the check of KEP-4815's multi-node devices from each node's ground
// truth: claims for a host's chips or a sub-slice, pods on every host of
// the claim, and what the pods see judged against each host's emulated
// hardware (chips, connectivity of the sub-torus, the TPU runtime
// environment). It remembers the groups of pods a scenario started.
package torus
