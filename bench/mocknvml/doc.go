// Command mocknvml is a stand-in for NVIDIA/k8s-test-infra's mock NVML
// (pkg/gpu/mocknvml), which the benchmark scripts/bench-nvml.sh compares
// drakit's NVML shim with. That mock is a Go c-shared libnvidia-ml.so whose
// C exports bridge into go-nvml's own mock package; k8s-test-infra cannot be
// fetched here (the Go proxy refuses it) and its code is not copied, so this
// module builds the same thing for the functions the benchmark calls:
// go-nvml's dgxa100 mock (github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100,
// eight A100-SXM4-40GB GPUs) behind cgo exports of nvmlInit_v2,
// nvmlShutdown, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
// nvmlDeviceGetUUID, nvmlDeviceGetName, nvmlDeviceGetMemoryInfo and
// nvmlDeviceGetPciInfo_v3. Every call goes through the mock's function
// (the server's and the device's ...Func), as a client of the real bridge
// would. nvmlInit_v2 creates the mock server on its first call.
//
// It is a separate module, so the main module's go build, vet and test
// ./... do not build it. Build it with
//
//	go build -buildmode=c-shared -o libnvidia-ml.so.1 .
//
// (scripts/bench-nvml.sh does).
package main
