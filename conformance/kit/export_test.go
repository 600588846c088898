package kit

import (
	"context"
	"io/fs"

	"k8s.io/client-go/kubernetes"
)

// What the kit's external tests (package kit_test: the tests that need the
// step packages of a whole run, conformance.Steps) use of its internals.
var (
	FakeClusterForTest  = fakeCluster
	ConfigForTest       = testConfig
	SliceForTest        = slice
	GPUForTest          = gpu
	CountPicklesForTest = countPickles
)

// stepGroupsForTest are the step packages of a whole run (conformance.Steps),
// which the kit's own tests cannot import: the external test package sets
// them (SetStepGroupsForTest) before any test runs, and every test that
// runs features runs them with these.
var stepGroupsForTest []StepGroup

// SetStepGroupsForTest sets the step packages the kit's tests run with.
func SetStepGroupsForTest(groups []StepGroup) { stepGroupsForTest = groups }

// StepGroupsForTest are the step packages the kit's tests run with.
func StepGroupsForTest() []StepGroup { return stepGroupsForTest }

// RunForTest runs the features of fsys with groups against the client kube.
func RunForTest(ctx context.Context, cfg Config, kube kubernetes.Interface, fsys fs.FS, groups []StepGroup) (Result, error) {
	st := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: kube, apiHost: "127.0.0.1", apiPort: 6443, artifacts: cfg.ArtifactsDir, features: fsys, stepGroups: groups}
	res, _, err := st.run(ctx)
	return res, err
}

// TestDriver is the driver the fake cluster's slices name.
const TestDriver = testDriver
