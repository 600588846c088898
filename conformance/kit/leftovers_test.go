package kit

import (
	"context"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/declaration"
)

func TestRemoveLeftoverRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rule := func(name, driver string, labels map[string]string) *resourceapi.DeviceTaintRule {
		return &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(driver)},
				Taint: resourceapi.DeviceTaint{Key: "drakit.dev/broken", Effect: resourceapi.DeviceTaintEffectNoExecute}}}
	}
	kube := fake.NewClientset(rule("drakit-abcde-broken", "gpu.drakit.dev", KitMeta("x").Labels), rule("admins-own", "gpu.drakit.dev", nil),
		rule("drakit-fghij-broken", "other.example.com", KitMeta("y").Labels))
	if err := (&Suite{Kube: kube, Driver: DriverSettings{declaration.Settings{DriverName: "gpu.drakit.dev"}}}).removeLeftoverRules(ctx); err != nil {
		t.Fatal(err)
	}
	list, err := kube.ResourceV1().DeviceTaintRules().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, r := range list.Items {
		left = append(left, r.Name)
	}
	slices.Sort(left)
	if !slices.Equal(left, []string{"admins-own", "drakit-fghij-broken"}) {
		t.Errorf("left %v, want the rule the kit did not create and the one of another driver's run", left)
	}
}
