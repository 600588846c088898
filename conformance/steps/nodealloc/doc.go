// Package nodealloc holds the steps of KEP-5517, DRA devices as node
// allocatable resources (features/kep-5517-native-resources): devices
// whose capacity maps onto the Node's allocatable cpu and memory, checked
// against the API server's validation, what the scheduler writes into the
// pod's status and counts against the node, and what the kubelet sets in
// the pod's cgroup. It remembers which capacity of the driver's devices
// maps onto cpu.
package nodealloc
