// Package contract holds the steps that check a driver's side of the
// kubelet's contract (DRA spec §17.2; features' driver-contract.feature),
// as the kubelet relies on it: a claim is unprepared once no pod uses it,
// which frees its device for the next claim and removes its CDI devices
// from the node whatever the driver names them; prepare and unprepare are
// idempotent; a driver restarted between them loses nothing. Without node
// access they judge from the API server and the containers; the node-side
// steps read the kubelet's checkpoint, the node's CDI specs and the
// driver's DRA socket.
package contract
