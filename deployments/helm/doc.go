// Package helm holds the Helm chart of drakit's reference drivers, the one
// source of their manifests: Chart returns it, embedded, for
// reference/deploy (drakit driver deploy) to render with Helm's engine, and
// helm install renders the same files.
//
// drakit-driver/ is the one chart of the driver family: its value kind
// picks the driver (gpu, nic, cpu, tpu or plain), and each of the options
// of `drakit driver deploy` is a value (values.yaml says which flag). What
// the kinds share (names, labels, RBAC, the admission policy, the
// DaemonSet's pod, host path checks) is written once; what a kind alone
// has is its own values (gpu.*, nic.*, tpu.*, plain.*), its flags and
// volumes, its DeviceClasses and its cluster-level controller (the GPU
// driver's IMEX controller, the TPU driver's sub-slice controller). Values
// left "" take the kind's default (the table drakit-driver.kinds in
// templates/_helpers.tpl). Install a driver with
//
//	helm install drakit-driver deployments/helm/drakit-driver --set gpu.bindingConditions=true
//	helm install drakit-nic-driver deployments/helm/drakit-driver --set kind=nic
//
// The release name names the objects when it contains the kind's name
// (drakit-driver, drakit-nic-driver, drakit-cpu-driver, drakit-tpu-driver,
// drakit-plain-driver; a plain variant's drakit-plain-<variant>). The
// schema, values.schema.json, is strict: an unknown value, at any level (a
// misspelt gpu.imex.channel as much as a misspelt driverName), fails the
// install naming the value.
//
// The node value is deploy's --node: the DaemonSet is named <name>-<node,
// dots as dashes>, labels and selects its pods with drakit.dev/node=<node>
// and runs them only on that node. Install one release per node, each with
// that node's paths and fullnameOverride the kind's name, so that every
// release renders the same cluster-wide objects as deploy does; the
// releases after the first take those over (helm install --take-ownership):
//
//	helm install drakit-driver-127-0-0-2 deployments/helm/drakit-driver --take-ownership \
//	  --set fullnameOverride=drakit-driver,node=127.0.0.2,kubeletRootDir=...,httpPort=9480
//
// Uninstall the node releases together: uninstalling the release that owns
// the shared objects (the last to take them over) deletes the namespace and
// with it every other node's DaemonSet, where `drakit driver delete --node`
// removes only the node's.
//
// The test installs the chart with Helm's own library (the client-only
// dry-run of helm install, as helm template does) for every kind, as a
// release named like the kind, for the defaults and for each option; it
// decodes every rendered object strictly and compares them, by kind,
// namespace and name, with what reference/deploy renders for the same
// options (its values for them), leaving out the labels of the release
// (helm.sh/chart, app.kubernetes.io/instance, version and managed-by: deploy
// is managed by drakit). A value and its flag cannot drift apart: the
// chart renders both. Values that reference/deploy refuses the chart
// refuses too, and helm lint finds nothing for any kind.
package helm
