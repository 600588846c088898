// Package registration holds the steps of a driver's life on its node
// (features/kep-4381-plugin-registration and the restart scenarios of
// KEP-4381): its registration with the kubelet's plugin registry and the
// endpoint it registers, what the kubelet does with the driver's
// ResourceSlices when the driver stops and runs again, and pods that keep
// running through a driver restart.
package registration
