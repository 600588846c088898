package kit

import (
	"fmt"
	"strings"
	"testing"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/probe"
	"drakit.dev/drakit/conformance/report"
)

// sharingScenario is the @core scenario that compares two pods' devices.
const sharingScenario = "Two pods sharing one ResourceClaim both run and see the same device"

// shiftGPUs is a driver that hands every container the next GPU of the
// fake node instead of the allocated one: its variable, its device node
// and what NVML lists.
func shiftGPUs(r *probe.Report) {
	env := map[string]string{}
	for k, v := range r.Env {
		if !strings.HasPrefix(k, "DRAKIT_DEVICE_") {
			env[k] = v
		}
	}
	for i, d := range r.Devices {
		if d.Major == 195 {
			m := (d.Minor + 1) % 4
			r.Devices[i] = probe.DeviceNode{Path: fmt.Sprintf("/dev/nvidia%d", m), Type: probe.CharDevice, Major: 195, Minor: m}
			env[fmt.Sprintf("DRAKIT_DEVICE_GPU_%d", m)] = fmt.Sprintf("GPU-aaaa-%d", m)
		}
	}
	for i, g := range r.NVML.GPUs {
		m := (g.Minor + 1) % 4
		r.NVML.GPUs[i].UUID, r.NVML.GPUs[i].Minor = fmt.Sprintf("GPU-aaaa-%d", m), m
	}
	r.Env = env
}

// coreOnFakeNode runs the @core KEP-4381 scenarios on the fake node and
// returns the sharing scenario's result.
func coreOnFakeNode(t *testing.T, cfg Config, run fakeRun) report.ScenarioResult {
	t.Helper()
	cfg.Tags = "@kep-4381 && @core"
	dropPartitions(cfg)
	noDriverPods(cfg)
	wholeKind(cfg).PCIeRootPeers = nil
	res, out := runFakeNode(t, cfg, run)
	for _, sr := range res.Scenarios {
		if sr.Name == sharingScenario {
			return sr
		}
	}
	t.Fatalf("no scenario %q ran:\n%s", sharingScenario, out)
	return report.ScenarioResult{}
}

// Without the node's directories the container-side observers (env,
// deviceNodes, nvml of the reference declaration) decide: a correct
// driver passes, one that hands the wrong GPU fails with findings that
// name the device, and a driver that declares none of them cannot be
// certified, which is no "not declared" skip.
func TestContainerSideObserversDecideWithoutTheNode(t *testing.T) {
	t.Parallel()
	t.Run("correct driver", func(t *testing.T) {
		t.Parallel()
		if sr := coreOnFakeNode(t, testConfig(t), fakeRun{blind: true}); sr.Status != report.StatusPassed {
			t.Errorf("%s: %s", sr.Status, sr.Message)
		}
	})
	t.Run("wrong device", func(t *testing.T) {
		t.Parallel()
		sr := coreOnFakeNode(t, testConfig(t), fakeRun{blind: true, container: func(_ string, r *probe.Report) { shiftGPUs(r) }})
		for _, want := range []string{
			"pod user-a: no environment variable DRAKIT_DEVICE_GPU_0 for allocated device 127.0.0.1/gpu-0",
			"pod user-a: no device node /dev/nvidia0 (c 195:0) for allocated device 127.0.0.1/gpu-0",
			"pod user-a: device node /dev/nvidia1 (c 195:1) of device 127.0.0.1/gpu-1 is in the container, which is not allocated to the pod's claims",
			"pod user-a: NVML in the container lists GPU GPU-aaaa-1",
		} {
			if sr.Status != report.StatusFailed || !strings.Contains(sr.Message, want) {
				t.Errorf("%s (%s), want failed with %q", sr.Status, sr.Message, want)
			}
		}
	})
	t.Run("nothing observable", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t)
		k := wholeKind(cfg)
		k.Observers, k.Identity.Env, k.DeviceNodes = []declaration.Observer{declaration.ObserverCDI}, nil, nil
		sr := coreOnFakeNode(t, cfg, fakeRun{blind: true})
		if sr.Status != report.StatusSkipped || !strings.HasPrefix(sr.Message, "could not certify") || report.UnclaimedSkip(sr.Message) {
			t.Errorf("%s (%s), want skipped as could not certify, not as not declared", sr.Status, sr.Message)
		}
	})
}

// An NVML that cannot be loaded in the container is no finding about
// device access: with everything else right the scenario cannot be
// certified; a loaded NVML that lists another GPU is a finding.
func TestNVMLNotLoadedIsNoFinding(t *testing.T) {
	t.Parallel()
	t.Run("not loaded", func(t *testing.T) {
		t.Parallel()
		sr := coreOnFakeNode(t, testConfig(t), fakeRun{container: func(_ string, r *probe.Report) {
			r.NVML = probe.NVML{Unavailable: "initialize NVML: ERROR_LIBRARY_NOT_FOUND", GPUs: []probe.GPU{}}
		}})
		want := "could not certify what the container sees through NVML: pod user-a: NVML could not be loaded in the container (initialize NVML: ERROR_LIBRARY_NOT_FOUND)"
		if sr.Status != report.StatusSkipped || !strings.HasPrefix(sr.Message, want) {
			t.Errorf("%s (%s), want skipped: %s", sr.Status, sr.Message, want)
		}
	})
	t.Run("wrong GPU", func(t *testing.T) {
		t.Parallel()
		sr := coreOnFakeNode(t, testConfig(t), fakeRun{container: func(_ string, r *probe.Report) {
			for i := range r.NVML.GPUs {
				r.NVML.GPUs[i].UUID = "GPU-other"
			}
		}})
		if want := "NVML in the container lists GPU GPU-other"; sr.Status != report.StatusFailed || !strings.Contains(sr.Message, want) {
			t.Errorf("%s (%s), want failed with %q", sr.Status, sr.Message, want)
		}
	})
}

// "pod B sees the same devices as pod A" compares what each container
// showed on its own: a difference in either observation is a finding, and
// two pods that show nothing are no pass.
func TestPodsSeeSameDevicesComparesTwoObservations(t *testing.T) {
	t.Parallel()
	cfg := referenceDriverConfig()
	world := func(a, b *seenDevices) *World {
		r := &probe.Report{}
		return &World{Suite: &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration)}, Pods: map[string]*PodRecord{"a": {Name: "a", Report: r, Seen: a}, "b": {Name: "b", Report: r, Seen: b}}}
	}
	same := &seenDevices{NodeChecked: true, Prepared: []string{"n/gpu-0"}, cdi: []string{"n/gpu-0"}, Shown: []string{"n/gpu-0"}, nvml: []string{"GPU-0"}}
	tests := map[string]struct {
		b    *seenDevices
		want string
	}{
		"same":               {b: same},
		"other device shown": {b: &seenDevices{NodeChecked: true, Prepared: same.Prepared, cdi: same.cdi, Shown: []string{"n/gpu-1"}, nvml: same.nvml}, want: "pod a shows devices [n/gpu-0] of driver gpu.drakit.dev, pod b showed [n/gpu-1]"},
		"other CDI edits":    {b: &seenDevices{NodeChecked: true, Prepared: same.Prepared, cdi: []string{"n/gpu-2"}, Shown: same.Shown, nvml: same.nvml}, want: "pod a shows the CDI edits of devices [n/gpu-0], pod b showed those of [n/gpu-2]"},
		"other GPU in NVML":  {b: &seenDevices{NodeChecked: true, Prepared: same.Prepared, cdi: same.cdi, Shown: same.Shown, nvml: []string{"GPU-3"}}, want: "pod a sees [GPU-0] through NVML, pod b saw [GPU-3]"},
		"nothing seen by b":  {b: &seenDevices{}, want: "pod b shows no device of driver gpu.drakit.dev by any observer"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := world(same, tc.b).podsSeeSameDevices("a", "b")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("podsSeeSameDevices = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("podsSeeSameDevices = %v, want %q", err, tc.want)
			}
		})
	}
	// The prepared devices, the kubelet's one record of a shared claim,
	// are no observation of either container.
	b := *same
	b.Prepared = []string{"n/gpu-9"}
	if err := world(same, &b).podsSeeSameDevices("a", "b"); err != nil {
		t.Errorf("podsSeeSameDevices compared the kubelet's record: %v", err)
	}
}
