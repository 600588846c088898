// Package podresources holds the steps of KEP-3695, the kubelet's
// PodResources API for DRA (features/kep-3695-pod-resources): what the
// kubelet reports of a pod's claims per container, compared with the
// claims' allocations, what the driver prepared and the node's CDI specs.
package podresources
