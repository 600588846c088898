// Package extendedresources holds the steps of KEP-5004, extended resources
// backed by DRA (features/kep-5004-extended-resources): a DeviceClass the
// kit creates over the driver's devices names an extended resource, a pod
// that asks for it in resources.limits gets the driver's devices through
// a ResourceClaim the scheduler creates for it, and ResourceQuota counts
// them. It remembers each scenario's DeviceClasses and the nodes'
// resources it noted.
package extendedresources
