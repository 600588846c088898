// Package binding holds the steps of KEP-5007, device binding conditions
// (features/kep-5007-binding-conditions), and of KEP-5945, optional node
// operations (features/kep-5945-optional-node-operations), which share the
// test driver's single devices published on a node: devices that the
// scheduler may bind a pod to only once their binding conditions hold,
// reported on the claim by each scenario's attach controller, and slices
// that let the kubelet skip NodePrepareResources and
// NodeUnprepareResources; with what the API server, the scheduler and the
// kubelet do with them.
package binding
