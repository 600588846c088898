// Package instances generates the allocator benchmark and test instances of
// docs allocator-anchors.md as *scenario.Scenario values with Satisfiable
// set: the hard families H1–H5 (H3b, and H5c = one more single-device claim
// than devices), the two first-fit fragmentation cases of §3.5, and the easy
// paths (1 claim on 8 GPUs; 10 devices × 500 nodes).
//
// Devices follow the scheduler_perf basic-device model: 14 attributes, two
// capacities, driver gpu.example.com and a DeviceClass gpu.example.com whose
// selector is device.driver == "gpu.example.com". Every generator is
// deterministic: the same parameters give the same scenario, byte for byte
// after scenario.Marshal.
//
// Families lists every family with its parameters, the sizes the anchors
// measured (up to 128 devices) and a generator; Generate builds one
// instance by family name. Parameters out of range are errors naming the
// parameter, never a panic. Instances of a family marked OneByOne are
// played pod by pod (scenario.OneByOne): each claim is allocated and
// committed before the next, which is where first fit fragments.
package instances
