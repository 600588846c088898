// Package fabric holds the steps of multi-node NVLink fabrics
// (features/kep-4381-structured-parameters/nvlink-fabric.feature, the
// declaration's fabric section): claims for GPUs of one NVLink clique and
// for IMEX channels, checked against ground truth, the cliques NVML
// reports inside the container and the IMEX channel device nodes the
// container has, never the driver's attributes.
package fabric
