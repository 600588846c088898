// Package status holds the steps of KEP-4817, device status in claims
// (features/kep-4817-device-status): what the driver reports in a claim's
// status.devices, checked against the claim's allocation and the node, and
// what the API server accepts there from whom.
package status
