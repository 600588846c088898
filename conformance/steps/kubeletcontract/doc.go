// Package kubeletcontract holds the steps that check the kubelet's contract
// with a driver (the DRA spec §17.2: idempotent prepare and unprepare,
// retries, per-claim errors; features' kubelet-contract.feature) through
// drakit interpose between the node's kubelet and the driver: they arm the
// interposer's faults for the kubelet's next call, read its records of
// what the kubelet asked and the driver answered, and call the driver
// through it.
package kubeletcontract
