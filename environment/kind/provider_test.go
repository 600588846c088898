package kind

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/types"
)

func TestProviderDefaultsAndOptions(t *testing.T) {
	p := NewProvider()
	if p.name != DefaultClusterName || p.wait != DefaultWaitForReady || p.kind == nil || p.config.Workers != -1 {
		t.Fatalf("defaults: name %q wait %v kind %v workers %d", p.name, p.wait, p.kind, p.config.Workers)
	}
	opts := ConfigOptions{NodeImage: "img:1", Workers: 2, StateDir: "/s", Offline: true}
	var c types.E2EClusterProvider = p
	c = c.WithName("lane").WithOpts(WithConfig(opts))
	if c.GetKubectlContext() != "kind-lane" {
		t.Errorf("context %q, want kind-lane", c.GetKubectlContext())
	}
	if !cmp.Equal(p.config, opts) {
		t.Errorf("config %+v, want %+v", p.config, opts)
	}
	if c.KubernetesRestConfig() != nil || c.GetKubeconfig() != "" {
		t.Error("a provider that created nothing has a kubeconfig")
	}
	p.config.StateDir = t.TempDir() + "/state"
	if path, err := p.kubeconfigPath(); err != nil || path != p.config.StateDir+"/kubeconfig" {
		t.Errorf("kubeconfig path %q (%v), want it in the state dir %s", path, err, p.config.StateDir)
	}
}

func TestNotReadyNodes(t *testing.T) {
	node := func(name string, ready corev1.ConditionStatus) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if ready != "" {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
		}
		return n
	}
	got := notReadyNodes([]corev1.Node{node("a", corev1.ConditionTrue), node("b", corev1.ConditionFalse), node("c", "")})
	if want := []string{"b", "c"}; !cmp.Equal(got, want) {
		t.Errorf("notReadyNodes = %v, want %v", got, want)
	}
}
