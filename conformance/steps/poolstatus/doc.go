// Package poolstatus holds the steps of KEP-5677, resource pool status
// (features/kep-5677-resource-pool-status): they ask kube-controller-
// manager's ResourcePoolStatusRequest controller about the driver's pools
// and compare its answer with what they compute from the ResourceSlices,
// ResourceClaims and DeviceTaintRules the API server stored. It remembers
// each scenario's requests and the devices of its claims.
package poolstatus
