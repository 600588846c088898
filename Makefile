# drakit — every target is one line; the logic lives in scripts/.
.DEFAULT_GOAL := help
SHELL := /bin/bash

.PHONY: help build test unit e2e conformance conformance-fabric conformance-kind kind-node-image components deps cluster-up cluster-down verify clean bench-nvml bench-faults bench-interpose bench-fabric docs

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

conformance: ## Main job: build what is missing, start the local cluster, deploy emulator + reference driver, run all features, write reports, tear down
	scripts/conformance.sh

conformance-fabric: ## Only the multi-node part of make conformance: 4 nodes of cluster profile conformance-fabric, GPU (NVLink, IMEX) and TPU drivers, @nvlink-fabric and @tpu-torus
	scripts/conformance-fabric.sh

conformance-kind: ## make conformance's runs on kind where Docker runs (DOCKER_HOST honoured): GPU, NIC, CPU, binding conditions on one node, the fabric on four (not @interpose)
	scripts/conformance-kind.sh

kind-node-image: ## Build the offline kind node image from drakit's cached components (needs Docker, debootstrap)
	scripts/kind-node-image.sh

test: ## Unit and integration tests, then the kit certifying the reference driver end to end
	scripts/test.sh

unit: ## Unit and integration tests only (no cluster)
	scripts/unit.sh

build: ## Build drakit, drakit-driver (the reference drivers, every --kind), drakit-probe and the NVML shim into _output/
	scripts/build.sh

components: ## Build the local cluster's components (Kubernetes, etcd, containerd, crictl) once per version into the cache
	scripts/build-components.sh

deps: ## Install the Debian packages the local cluster needs (runc), only when missing
	scripts/install-deps.sh

cluster-up: build components deps ## Start the local cluster (left running; drakit env up) with drakit's images (probe, drivers) imported
	scripts/build-images.sh
	_output/bin/drakit env up --provider local --images-dir _output/images

cluster-down: ## Stop the local cluster and remove its state (drakit env down)
	_output/bin/drakit env down --provider local

bench-nvml: ## Time the NVML shim against a mock NVML (go-nvml's dgxa100 behind cgo exports) with one C client; needs root for the emulator root's device nodes
	scripts/bench-nvml.sh

bench-faults: ## Time an emulated GPU fault to Unhealthy in the pod's status, the driver's taint and the eviction (local cluster, 20 runs)
	scripts/bench-faults.sh

bench-fabric: ## Time upstream's and the reference allocator on the 1,000-node scale-1000 cluster profile (clique-aligned GB200 claim, 4x4x4 TPU sub-slice), one core
	scripts/bench-allocator.sh Fabric

bench-interpose: ## Time NodePrepareResources of the reference GPU driver for 1 and 8 GPUs through drakit interpose (local cluster)
	scripts/bench-interpose.sh

docs: ## Regenerate docs/scenarios.md and the README's table of profiles from the features (go test ./cmd/drakit/... fails while they are stale)
	go run ./cmd/drakit conformance catalogue --out docs/scenarios.md --readme README.md

verify: ## gofmt, go vet, shellcheck when installed
	scripts/verify.sh

clean: ## Remove build outputs and artifacts (not the component cache)
	rm -rf _output artifacts
