// Package helm holds the Helm charts of drakit's reference drivers and the
// test that keeps them the same as reference/deploy.
//
// drakit-driver/ is the reference GPU driver's chart: the objects that
// `drakit driver deploy` applies (reference/deploy.Objects), with each of
// its options a value (values.yaml says which flag). Install it with
//
//	helm install drakit-driver deployments/helm/drakit-driver --set bindingConditions=true
//
// drakit-nic-driver/ and drakit-cpu-driver/ are the NIC and CPU drivers'
// charts: reference/deploy.NICObjects and CPUObjects, each field of their
// options but Node and Timeout a value.
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
