package opaqueconfig

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cucumber/godog"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/kit/kittest"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
)

// sampleConfig is an upstream-style driver's declared sample.
var sampleConfig = &declaration.OpaqueConfig{
	Parameters: json.RawMessage(`{"apiVersion":"gpu.example.com/v1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing"}}`),
	Env:        map[string]string{"GPU_SHARING_STRATEGY": "TimeSlicing"},
}

// TestClaimWithSampleConfig: the claim passes the driver exactly the
// declared parameters, for the request, under the driver's own name; a
// driver without a sample is not judged (a not-declared skip).
func TestClaimWithSampleConfig(t *testing.T) {
	t.Parallel()
	cfg := kittest.ReferenceDriverConfig(t)
	cfg.Declaration.DeviceKinds[0].OpaqueConfig = sampleConfig
	kube := fake.NewClientset()
	w := &world{World: kit.NewWorld(cfg, kube, "test")}
	if _, err := w.claimWithSampleConfig(t.Context(), "configured", 1); err != nil {
		t.Fatal(err)
	}
	c, err := kube.ResourceV1().ResourceClaims("test").Get(t.Context(), "configured", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Spec.Devices.Config); n != 1 {
		t.Fatalf("claim config has %d entries, want 1", n)
	}
	got := c.Spec.Devices.Config[0]
	if got.Opaque == nil || got.Opaque.Driver != w.Driver.DriverName || string(got.Opaque.Parameters.Raw) != string(sampleConfig.Parameters) ||
		len(got.Requests) != 1 || got.Requests[0] != c.Spec.Devices.Requests[0].Name {
		t.Errorf("claim config = %+v, want the sample for driver %s and request %s", got, w.Driver.DriverName, c.Spec.Devices.Requests[0].Name)
	}

	w.Driver.OpaqueConfig = nil
	_, err = w.claimWithSampleConfig(t.Context(), "unconfigured", 1)
	if !errors.Is(err, godog.ErrSkip) || !strings.Contains(err.Error(), "not declared") {
		t.Errorf("without a sample: err = %v, want a not-declared skip", err)
	}
}

// TestPodShowsSampleConfig: a container with the declared variable passes;
// one without it (the driver ignored the config) or with another value (it
// applied something else) is a finding naming the variable.
func TestPodShowsSampleConfig(t *testing.T) {
	t.Parallel()
	cfg := kittest.ReferenceDriverConfig(t)
	cfg.Declaration.DeviceKinds[0].OpaqueConfig = sampleConfig
	for _, tc := range []struct {
		Name string
		env  map[string]string
		want string
	}{
		{"applied", map[string]string{"GPU_SHARING_STRATEGY": "TimeSlicing", "OTHER": "x"}, ""},
		{"ignored", map[string]string{"OTHER": "x"}, "ignored the opaque config"},
		{"other value", map[string]string{"GPU_SHARING_STRATEGY": "MPS"}, "GPU_SHARING_STRATEGY=MPS, want TimeSlicing"},
	} {
		w := &world{World: kit.NewWorld(cfg, nil, "")}
		w.Pods["p"] = &kit.PodRecord{Name: "p", Report: &probe.Report{Env: tc.env}}
		err := w.podShowsSampleConfig("p")
		judge(t, tc.Name, err, tc.want)
	}

	// A variable per device, named by the device's attributes, as an
	// upstream-style driver sets GPU_DEVICE_<index>_SHARING.
	cfg.Declaration.DeviceKinds[0].OpaqueConfig = &declaration.OpaqueConfig{Parameters: sampleConfig.Parameters,
		Env: map[string]string{"GPU_DEVICE_{attribute:index}_SHARING": "TimeSlicing on {device}"}}
	devices := []observe.Device{
		{Pool: "n", Device: "gpu-1", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"index": {IntValue: ptr.To[int64](1)}}},
		{Pool: "n", Device: "gpu-3", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"index": {IntValue: ptr.To[int64](3)}}},
	}
	for _, tc := range []struct {
		Name string
		env  map[string]string
		want string
	}{
		{"per device", map[string]string{"GPU_DEVICE_1_SHARING": "TimeSlicing on gpu-1", "GPU_DEVICE_3_SHARING": "TimeSlicing on gpu-3"}, ""},
		{"one device ignored", map[string]string{"GPU_DEVICE_1_SHARING": "TimeSlicing on gpu-1"}, "no GPU_DEVICE_3_SHARING"},
	} {
		w := &world{World: kit.NewWorld(cfg, nil, "")}
		w.Pods["p"] = &kit.PodRecord{Name: "p", Report: &probe.Report{Env: tc.env}, Devices: devices}
		judge(t, tc.Name, w.podShowsSampleConfig("p"), tc.want)
	}
}

// judge checks a step's error: none when want is empty, else a finding
// containing want.
func judge(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", name, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: err = %v, want a finding with %q", name, err, want)
	}
}
