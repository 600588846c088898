// Package fabric builds allocation cases on a cluster with fabrics: the
// 1,000-node scale-1000 cluster profile (emulator/clusterprofile) as the
// reference drivers publish it (reference/simulate.ClusterSlices), with
// claims that follow the fabric contract's names — an IMEX channel and a
// GB200 node's GPUs aligned on gpu.drakit.dev/nvlinkClique, a 4x4x4 TPU
// sub-slice, the same on a fragmented torus. The allocator benchmarks
// (reference/allocator/bench BenchmarkFabric, make bench-fabric) time them
// for upstream's and the reference allocator; each Case knows on how many
// of the nodes its claim fits, which both allocators must agree on.
package fabric
