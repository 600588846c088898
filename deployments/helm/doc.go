// Package helm holds the Helm charts of drakit's reference drivers and the
// test that keeps them the same as reference/deploy.
//
// drakit-driver/ is the reference GPU driver's chart: the objects that
// `drakit driver deploy` applies (reference/deploy.Objects), with each of
// its options a value (values.yaml says which flag). Install it with
//
//	helm install drakit-driver deployments/helm/drakit-driver --set bindingConditions=true
//
// drakit-nic-driver/, drakit-cpu-driver/, drakit-tpu-driver/ and
// drakit-plain-driver/ are the NIC, CPU, TPU and plain drivers' charts:
// reference/deploy.NICObjects, CPUObjects, TPUObjects (the kubelet plugin
// and the sub-slice controller's Deployment) and PlainObjects, each field
// of their options but Timeout a value. Every chart's values.schema.json
// is strict: an unknown value, at any level (a misspelt imex.channel as
// much as a misspelt driverName), fails the install naming the value.
//
// Every chart's node value is deploy's --node: the DaemonSet is named
// <name>-<node, dots as dashes>, labels and selects its pods with
// drakit.dev/node=<node> and runs them only on that node. Install one
// release per node, each with that node's paths and fullnameOverride the
// chart's name, so that every release renders the same cluster-wide
// objects as deploy does; the releases after the first take those over
// (helm install --take-ownership):
//
//	helm install drakit-driver-127-0-0-2 deployments/helm/drakit-driver --take-ownership \
//	  --set fullnameOverride=drakit-driver,node=127.0.0.2,kubeletRootDir=...,httpPort=9480
//
// Uninstall the node releases together: uninstalling the release that owns
// the shared objects (the last to take them over) deletes the namespace and
// with it every other node's DaemonSet, where `drakit driver delete --node`
// removes only the node's.
//
// The test renders each chart with Helm's own library (the client-only
// dry-run of helm install, as helm template does) as a release named like
// the chart, for the defaults and for each option; it decodes every
// rendered object strictly and compares them, by kind, namespace and name,
// with what reference/deploy builds for the same options, leaving out the
// labels only Helm adds (helm.sh/chart, app.kubernetes.io/instance, version
// and managed-by). Values that reference/deploy refuses the charts refuse
// too, and helm lint finds nothing.
package helm
