package deploy

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	resourceapi "k8s.io/api/resource/v1"
)

func TestObjectsIMEXController(t *testing.T) {
	t.Parallel()
	opts := DefaultOptions(KindGPU)
	m, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.Controller != nil {
		t.Fatal("IMEX controller rendered without IMEXChannels")
	}
	opts.DriverName, opts.IMEXChannels, opts.Image = "gpu.example.com", 16, "example/driver:1"
	m, err = Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.Controller == nil {
		t.Fatal("no IMEX controller with IMEXChannels 16")
	}
	class := m.Classes[1]
	if class.Name != "imex.gpu.example.com" ||
		class.Spec.Selectors[0].CEL.Expression != `device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].?type.orValue("") == "imex-channel"` {
		t.Errorf("class %s: %s", class.Name, class.Spec.Selectors[0].CEL.Expression)
	}
	c := m.Controller.Deployment.Spec.Template.Spec.Containers[0]
	for _, want := range []string{"controller", "--kind=gpu", "--driver-name=gpu.example.com", "--device-class=imex.gpu.example.com", "--channels=16"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("controller args %v lack %s", c.Args, want)
		}
	}
	if c.Image != "example/driver:1" || *m.Controller.Deployment.Spec.Replicas != 1 {
		t.Errorf("image %s, replicas %d", c.Image, *m.Controller.Deployment.Spec.Replicas)
	}
	if sc := c.SecurityContext; sc == nil || *sc.Privileged || !*sc.RunAsNonRoot || len(sc.Capabilities.Add) > 0 {
		t.Errorf("controller security context %+v: want unprivileged, non-root, no capability", sc)
	}
	// Applied after the driver's objects; the class before the controller
	// that looks it up.
	objs := m.List()
	classAt, deployAt := -1, -1
	for i, o := range objs {
		switch o := o.(type) {
		case *resourceapi.DeviceClass:
			if o.Name == class.Name {
				classAt = i
			}
		case *appsv1.Deployment:
			deployAt = i
		}
	}
	if classAt < 0 || deployAt != len(objs)-1 || classAt > deployAt {
		t.Errorf("IMEX class at %d, deployment at %d of %d objects", classAt, deployAt, len(objs))
	}
	rules := m.Controller.ClusterRole.Rules
	if len(rules) != 2 || rules[1].Resources[0] != "deviceclasses" || strings.Join(rules[1].Verbs, ",") != "get" {
		t.Errorf("cluster role rules %+v", rules)
	}
	opts.IMEXChannels = 4096
	if err := opts.Validate(); err == nil || !strings.Contains(err.Error(), "--imex-channels") {
		t.Errorf("4096 channels: %v", err)
	}
}
