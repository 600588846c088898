package driver

// Binding condition names (KEP-5007): the condition types are these,
// qualified with the driver's name.
const (
	bindingConditionAttached     = "attached"
	bindingConditionAttachFailed = "attach-failed"
)

// BindingConditionTypes returns the bindingConditions and
// bindingFailureConditions a driver named driverName publishes on every
// device with Config.BindingConditions: "<driverName>/attached", which an
// attach controller sets True once the device is attached to the node the
// scheduler chose, and "<driverName>/attach-failed", which it sets True
// when attaching failed. Both are condition types in the driver's own
// domain, label-name-like as the API server requires; the slices are the
// caller's.
func BindingConditionTypes(driverName string) (conditions, failureConditions []string) {
	return []string{driverName + "/" + bindingConditionAttached}, []string{driverName + "/" + bindingConditionAttachFailed}
}
