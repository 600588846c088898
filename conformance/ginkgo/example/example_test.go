package example_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/onsi/ginkgo/v2"

	"drakit.dev/drakit/conformance"
	drakitginkgo "drakit.dev/drakit/conformance/ginkgo"
)

// flags hold the kit's settings from the --drakit.* flags and the
// environment of drakit's local cluster.
var flags = drakitginkgo.Flags(flag.CommandLine)

func init() {
	flags.DriverConfig = filepath.Join("..", "..", "..", "docs", "examples", "reference-driver.yaml")
}

// The kit's scenarios, one It each, beside whatever specs the suite has.
var _ = drakitginkgo.Register(func() (conformance.Config, error) {
	c, err := flags.Resolved()
	if err != nil {
		return c, err
	}
	if c.NodeSysfsRoot == "" && c.NodeEmulatorRoot != "" {
		c.NodeSysfsRoot = filepath.Join(c.NodeEmulatorRoot, "sys")
	}
	return c, nil
})

// TestIntegrationGinkgoExample runs the suite against the cluster of
// DRAKIT_KUBECONFIG (or --drakit.kubeconfig). The specs run one at a time,
// so the whole kit takes long, longer than go test's default timeout:
// without a label filter or focus the test skips.
func TestIntegrationGinkgoExample(t *testing.T) {
	if flags.Config.Kubeconfig == "" {
		t.Skip("no cluster: set DRAKIT_KUBECONFIG to the local cluster's kubeconfig with the reference driver deployed, or pass --drakit.kubeconfig")
	}
	suiteConfig, _ := ginkgo.GinkgoConfiguration()
	if suiteConfig.LabelFilter == "" && len(suiteConfig.FocusStrings) == 0 && len(suiteConfig.FocusFiles) == 0 {
		t.Skip("no scenarios selected: pass -args --ginkgo.label-filter=... (kep-4815, 'kep-4381 && core', profile:partitionable), --ginkgo.focus or --ginkgo.focus-file")
	}
	if !ginkgo.RunSpecs(t, "drakit conformance example") {
		t.Fatal("the kit's selected scenarios did not all pass as Ginkgo specs (see the failures above)")
	}
}
