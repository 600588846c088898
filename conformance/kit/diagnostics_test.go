package kit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cucumber/godog"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// TestDiagnosticsListPodGroups: a failed scenario that made PodGroups and
// Workloads shows them, with their status, in its diagnostics.
func TestDiagnosticsListPodGroups(t *testing.T) {
	t.Parallel()
	const ns = "drakit-abc"
	pg := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "group", Namespace: ns}}
	pg.Status.ResourceClaimStatuses = []schedulingapi.PodGroupResourceClaimStatus{{Name: "dev", ResourceClaimName: ptr.To("group-dev-x7k2q")}}
	wl := &schedulingapi.Workload{ObjectMeta: metav1.ObjectMeta{Name: "crowded-but-valid", Namespace: ns}}
	cfg := testConfig(t)
	noDriverPods(cfg)
	w := &World{Suite: &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: fake.NewClientset(pg, wl)}, Ns: ns, Ledger: &Ledger{}, Scenario: &godog.Scenario{Name: "s"}}
	without := string(w.diagnostics(context.Background(), errors.New("boom")))
	if strings.Contains(without, "PodGroups") {
		t.Errorf("diagnostics of a scenario without PodGroups list them:\n%s", without)
	}
	w.Ledger.Add(KindPodGroup, "group")
	w.Ledger.Add(KindWorkload, "crowded-but-valid")
	got := string(w.diagnostics(context.Background(), errors.New("boom")))
	for _, want := range []string{"===== PodGroups =====", "name: group\n", "resourceClaimName: group-dev-x7k2q", "===== Workloads =====", "name: crowded-but-valid"} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, got)
		}
	}
}
