package plaindriver

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxVariantName bounds a variant's name: it prefixes the driver name
// <variant>.plain.drakit.dev, which names the kubelet registration socket
// <kubelet root>/plugins_registry/<driver>-reg.sock, at most 107 bytes
// long: 13 leaves 50 for the kubelet's root directory (drakit's local
// cluster's under /home/<user>/.local/state).
const MaxVariantName = 13

// ValidateVariantName reports a name that is not a DNS label of at most
// MaxVariantName characters; the empty name (no variant) is valid.
func ValidateVariantName(name string) error {
	if name == "" {
		return nil
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("variant %q: %s", name, strings.Join(msgs, "; "))
	}
	if len(name) > MaxVariantName {
		return fmt.Errorf("variant %q has %d characters, at most %d", name, len(name), MaxVariantName)
	}
	return nil
}

// VariantDriverName is the driver name of a variant deployed beside the
// others: <variant>.plain.drakit.dev; DefaultDriverName for "".
func VariantDriverName(variant string) string {
	if variant == "" {
		return DefaultDriverName
	}
	return variant + "." + DefaultDriverName
}

// DeviceClass is one DeviceClass of a deployment: its name and the CEL
// expression of its one selector.
type DeviceClass struct {
	Name, Expression string
	// Kind is the device kind the class selects (whole, partition,
	// shared), as the declaration's deviceKinds name them.
	Kind string
}

// DeviceClasses are the classes a deployment of driver in style s has: the
// class named like the driver selects its whole devices (every device of a
// style with one kind); the partitions style adds partition.<driver>, the
// consumable-capacity style shared.<driver>.
func DeviceClasses(driver string, s Style) []DeviceClass {
	all := fmt.Sprintf("device.driver == %q", driver)
	kind := func(k string) string {
		return fmt.Sprintf("%s && device.attributes[%q].%s == %q", all, driver, attributeKind, k)
	}
	switch s.effective() {
	case StylePartitions:
		return []DeviceClass{{driver, kind(kindWhole), kindWhole}, {"partition." + driver, kind(kindPartition), kindPartition}}
	case StyleConsumableCapacity:
		return []DeviceClass{{driver, kind(kindWhole), kindWhole}, {"shared." + driver, kind(kindShared), kindShared}}
	}
	return []DeviceClass{{driver, all, kindWhole}}
}
