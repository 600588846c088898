// Package interpose sits between the kubelet and a DRA driver on the plugin
// sockets, records every call and injects contract faults: the kit's
// interposer (drakit interpose), for checking the kubelet contract of
// docs/dra-1.37-spec.md §17 against any driver whose sockets it can reach.
//
// Placement. The driver under test registers in a registration directory
// of its own (its kubelet registrar directory pointed away from the
// kubelet's). Start asks the driver's registration socket
// (Config.DriverRegistrationSocket, or the newest socket in
// Config.DriverRegistrarDir) Registration.GetInfo
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1) for its name, endpoint
// and supported versions (a missing socket, a failing GetInfo and a plugin
// that is not a DRAPlugin are errors: ErrNoDriver, ErrNotDRAPlugin), serves
// on its own endpoint (Config.Endpoint, default interpose.sock beside the
// driver's) the services the driver offers — DRAPlugin v1 and v1beta1,
// DRAResourceHealth v1 and v1alpha1, typed with k8s.io/kubelet's generated
// gRPC code — forwarding each call to the driver's socket, and registers
// in the kubelet's directory as <driver>-reg.sock with that endpoint,
// passing the kubelet's NotifyRegistrationStatus on to the driver. Close
// removes every socket it created; a stale socket file is replaced, a
// served one refused (ErrSocketInUse); no socket path exceeds
// unixsocket.MaxSocketPath.
//
// Following the driver. The interposer keeps looking at the driver's
// registration sockets while it runs (follow.go) and forwards to the
// newest that answers GetInfo for the driver, as the kubelet calls the most
// recently registered instance of a driver. So it follows a driver with
// per-pod socket names (kubeletplugin.RollingUpdate: the registration
// socket <driver>-<pod UID>-reg.sock or the hashed name the library falls
// back to, the DRA socket dra-<pod UID>.sock) across a rolling update of
// its DaemonSet, and a driver whose container restarted. The kubelet keeps
// the one registration of the interposer; a new instance gets the
// kubelet's last registration status from the interposer. Records name
// the driver endpoint each call went to.
//
// Records. Every call is a Record (method, service, source kubelet or
// direct, claims with the driver's devices, CDI IDs and per-claim errors,
// the driver's and the caller's gRPC status, the faults that fired, start
// and durations), kept in memory (Records, with a Filter) and appended as
// a JSON line to Config.Records.
//
// Faults. A Rule fires at a point (before forwarding, after the driver
// answered) of NodePrepareResources or NodeUnprepareResources, for calls
// naming a claim or any, on every call or Times times, with one action:
// delay, a gRPC error, dropping the kubelet's connection, replacing one
// claim's answer with a per-claim error, running a command (e.g. one that
// restarts the driver) or calling a library hook (Hooks, given to Start). Rules come from a strict
// YAML file (kind FaultRules, ParseRules) and can be armed and cleared
// while running. Only the kubelet's calls meet faults.
//
// Direct calls. Prepare and Unprepare call the driver's socket without the
// kubelet (and without faults), so that the kit can check idempotency:
// a repeated prepare returns the same CDI IDs, a repeated unprepare and an
// unprepare of a claim never prepared succeed.
//
// Control. With Config.Control the interposer serves a small HTTP API on a
// unix socket or 127.0.0.1 (control.go lists it); Client is its Go client,
// which the kit's steps use (drakit conformance --interpose ADDRESS).
package interpose
