// Package example is a Ginkgo v2 suite that runs drakit's conformance
// features through drakit.dev/drakit/conformance/ginkgo, as a driver
// author's own suite would (example_test.go), against drakit's local
// cluster with the reference GPU driver deployed. It runs when
// DRAKIT_KUBECONFIG names the cluster (eval "$(drakit env status -o
// env)" also sets the node directories it reads) and a label filter or
// focus selects scenarios, and skips otherwise:
//
//	eval "$(_output/bin/drakit env status -o env)"
//	go test -timeout 30m ./conformance/ginkgo/example -args \
//	  --ginkgo.label-filter='kep-4815' --drakit.fail-on-skip --ginkgo.v
//
// The driver declaration defaults to docs/examples/reference-driver.yaml
// (--drakit.driver-config), the node's sysfs to $DRAKIT_EMULATOR_ROOT/sys
// (--drakit.node-sysfs), the reports to a temporary directory
// (--drakit.artifacts or $ARTIFACTS).
package example
