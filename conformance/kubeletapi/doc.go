// Package kubeletapi calls the kubelet's node-local gRPC sockets the way
// the kubelet and monitoring agents do, for the conformance steps that
// check a DRA driver's kubelet plugin contract (DRA spec §17.1) and the
// kubelet's PodResources API for DRA (KEP-3695, spec §16):
//
//   - Registrations asks every registration socket below the kubelet's
//     plugin registry (<kubelet root>/plugins_registry) Registration.GetInfo
//     (k8s.io/kubelet/pkg/apis/pluginregistration/v1), as the kubelet's
//     plugin watcher does. It never calls NotifyRegistrationStatus: only the
//     kubelet may tell a plugin whether it is registered.
//   - ServesDRAPlugin calls a registered endpoint's DRAPlugin v1
//     NodeUnprepareResources with no claims, a call every driver must
//     answer (unprepare is idempotent and every claim of a call, here none,
//     gets an answer) and that changes nothing on the node.
//   - Prepare and Unprepare call a driver's DRAPlugin v1
//     NodePrepareResources and NodeUnprepareResources as the kubelet does,
//     for the kit's idempotency checks: a repeated call must answer as
//     the first.
//   - ServiceName tells a registered version that names a gRPC service
//     ("v1.DRAPlugin") from anything else (semver, an empty string).
//   - PodResources is a client of the kubelet's podresources v1 socket
//     (<kubelet root>/pod-resources/kubelet.sock): List and Get.
package kubeletapi
