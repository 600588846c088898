// Package kind is the kit's kind cluster provider: a
// sigs.k8s.io/e2e-framework cluster provider (types.E2EClusterProvider and
// types.E2EClusterProviderWithImageLoader) that creates, loads images into,
// collects logs from and deletes kind clusters through sigs.k8s.io/kind's
// Go library (pkg/cluster, the docker node provider), never through the
// kind binary.
//
// The cluster's configuration is the repository's kind/cluster.yaml with
// the kit's additions (Generate): the node image, the number of workers,
// and per node a host directory mounted at the emulator root and one at
// the CDI directory, so that the emulated hardware rendered inside the node
// (RenderCommands, run with Provider.RunOnNode) is also readable from the
// host. Image archives are loaded as `kind load image-archive` loads them
// (nodeutils.LoadImageArchive on every node).
//
// The node image itself is built offline by the subpackage nodeimage.
package kind
