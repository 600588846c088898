// Package fabric builds allocation cases on a cluster with fabrics: the
// 1,000-node scale-1000 cluster profile (emulator/clusterprofile) as the
// reference drivers publish it (reference/simulate.ClusterSlices), with
// claims that follow the fabric contract's names — an IMEX channel and a
// GB200 node's GPUs aligned on gpu.drakit.dev/nvlinkClique, a 4x4x4 TPU
// sub-slice, the same on a fragmented torus. Its benchmark (BenchmarkFabric,
// make bench-fabric) times them for upstream's and the reference allocator
// (oracle/allocator/bench), and TestFabricCases checks that both agree on
// how many of the nodes each Case's claim fits. The package lives beside the
// simulator, not in the oracle, because it builds the pools with the
// drivers' own code, which the oracle never imports.
package fabric
