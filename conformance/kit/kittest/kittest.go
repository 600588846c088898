// Package kittest helps the unit tests of step packages: the kit configured
// by drakit's reference driver's declaration, and a scenario's world
// outside any run. Only tests import it.
package kittest

import (
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/kit"
)

// ReferenceDriverConfig is the kit configured by
// docs/examples/reference-driver.yaml, with no flag set.
func ReferenceDriverConfig(t testing.TB) kit.Config {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	d, err := declaration.Load(filepath.Join(filepath.Dir(file), "../../../docs/examples/reference-driver.yaml"))
	if err != nil {
		t.Fatalf("load the reference driver's declaration: %v", err)
	}
	c := kit.DefaultConfig()
	c.Declaration = d
	return c
}

// World is a scenario's world outside any run, with the reference driver's
// configuration, the client kube and the namespace ns.
func World(t testing.TB, kube kubernetes.Interface, ns string) *kit.World {
	t.Helper()
	return kit.NewWorld(ReferenceDriverConfig(t), kube, ns)
}
