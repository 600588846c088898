package conformance

import (
	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/steps/adminaccess"
	"drakit.dev/drakit/conformance/steps/alignment"
	"drakit.dev/drakit/conformance/steps/attributes"
	"drakit.dev/drakit/conformance/steps/binding"
	"drakit.dev/drakit/conformance/steps/capacity"
	"drakit.dev/drakit/conformance/steps/contract"
	"drakit.dev/drakit/conformance/steps/extendedresources"
	"drakit.dev/drakit/conformance/steps/fabric"
	"drakit.dev/drakit/conformance/steps/faults"
	"drakit.dev/drakit/conformance/steps/kubeletcontract"
	"drakit.dev/drakit/conformance/steps/metadata"
	"drakit.dev/drakit/conformance/steps/nodealloc"
	"drakit.dev/drakit/conformance/steps/nodeselection"
	"drakit.dev/drakit/conformance/steps/opaqueconfig"
	"drakit.dev/drakit/conformance/steps/partitions"
	"drakit.dev/drakit/conformance/steps/podgroups"
	"drakit.dev/drakit/conformance/steps/podresources"
	"drakit.dev/drakit/conformance/steps/pools"
	"drakit.dev/drakit/conformance/steps/poolstatus"
	"drakit.dev/drakit/conformance/steps/prioritized"
	"drakit.dev/drakit/conformance/steps/quota"
	"drakit.dev/drakit/conformance/steps/registration"
	"drakit.dev/drakit/conformance/steps/slicelint"
	"drakit.dev/drakit/conformance/steps/status"
	"drakit.dev/drakit/conformance/steps/torus"
)

// Steps are the step packages of a run, beside the kit's own steps: one
// line per package. A new KEP adds its package here and its feature
// directory under features/, and touches nothing else.
var Steps = []kit.StepGroup{
	adminaccess.Steps,
	alignment.Steps,
	attributes.Steps,
	binding.Steps,
	capacity.Steps,
	contract.Steps,
	extendedresources.Steps,
	fabric.Steps,
	faults.Steps,
	kubeletcontract.Steps,
	metadata.Steps,
	nodealloc.Steps,
	nodeselection.Steps,
	opaqueconfig.Steps,
	partitions.Steps,
	podgroups.Steps,
	podresources.Steps,
	pools.Steps,
	poolstatus.Steps,
	prioritized.Steps,
	quota.Steps,
	registration.Steps,
	slicelint.Steps,
	status.Steps,
	torus.Steps,
}
