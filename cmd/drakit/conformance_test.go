package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/report"
)

func TestConformanceFlagsMapOntoConfig(t *testing.T) {
	cfg := conformance.DefaultConfig()
	fs := pflag.NewFlagSet("conformance", pflag.ContinueOnError)
	bindConformanceFlags(fs, &cfg)
	err := fs.Parse([]string{
		"--kubeconfig", "/k", "--driver", "gpu.example.com", "--device-class", "big", "--uuid-attribute", "nvidia.com/uuid",
		"--device-env-prefix", "", "--partition-class", "mig.example.com", "--profile-attribute", "example.com/profile",
		"--parent-uuid-attribute", "parent", "--memory-capacity", "example.com/mem", "--probe-image", "probe:1", "--probe-binary", "/probe", "--image-pull-policy", "IfNotPresent",
		"--apiserver-host", "127.0.0.2", "--apiserver-port", "16443", "--node-cdi-dir", "/cdi", "--driver-namespace", "gpu",
		"--node-emulator-roots", "127.0.0.1=/r1,127.0.0.2=/r2",
		"--driver-pod-selector", "app=d", "--tags", "@kep-4381", "--profile", "core", "--fail-on-skip", "--hardware", "--artifacts", "/a",
		"--api-timeout", "1s", "--publish-timeout", "2s", "--pod-start-timeout", "3s", "--pod-delete-timeout", "4s",
		"--cleanup-timeout", "5s", "--scheduler-binding-timeout", "6s", "--concurrency", "3", "--random", "-1", "--format", "progress", "--no-colors",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := conformance.Config{
		Kubeconfig: "/k", DriverName: "gpu.example.com", DeviceClassName: "big", UUIDAttribute: "nvidia.com/uuid",
		DeviceEnvPrefix: "", PartitionClassName: "mig.example.com", ProfileAttribute: "example.com/profile",
		ParentUUIDAttribute: "parent", MemoryCapacity: "example.com/mem", ProbeImage: "probe:1", ProbeBinary: "/probe", ImagePullPolicy: "IfNotPresent",
		APIServerHost: "127.0.0.2", APIServerPort: 16443, NodeCDIDir: "/cdi", DriverNamespace: "gpu",
		NodeEmulatorRoots: map[string]string{"127.0.0.1": "/r1", "127.0.0.2": "/r2"},
		DriverPodSelector: "app=d", Tags: "@kep-4381", Profile: "core", FailOnSkip: true, Hardware: true, ArtifactsDir: "/a",
		Timeouts:    conformance.Timeouts{API: time.Second, Publish: 2 * time.Second, PodStart: 3 * time.Second, PodDelete: 4 * time.Second, Cleanup: 5 * time.Second, SchedulerBinding: 6 * time.Second},
		Concurrency: 3, Randomize: -1, Format: "progress", NoColors: true,
	}
	if diff := cmp.Diff(want, cfg, cmpopts.IgnoreFields(conformance.Config{}, "Output", "TestingT")); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestConformanceCommandFailsFast(t *testing.T) {
	t.Setenv("DRAKIT_KUBECONFIG", "")
	t.Setenv("DRAKIT_CDI_DIR", "")
	tests := map[string]struct {
		args []string
		want string
	}{
		"missing kubeconfig file": {args: []string{"--kubeconfig", "/nonexistent/kubeconfig", "--driver-config", "../../docs/examples/env-only-driver.yaml"}, want: "load kubeconfig: stat /nonexistent/kubeconfig"},
		"no driver":               {args: []string{"--kubeconfig", "/k"}, want: "DriverName: required"},
		"invalid flags":           {args: []string{"--kubeconfig", "/k", "--concurrency", "0", "--image-pull-policy", "Often"}, want: "invalid conformance config"},
		"unknown profile":         {args: []string{"--kubeconfig", "/k", "--profile", "gold"}, want: `Profile: unknown profile "gold" (known: ` + strings.Join(report.ProfileNames(), ", ") + `)`},
		"no kubeconfig":           {args: nil, want: "Kubeconfig: required"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cmd := newConformanceCommand()
			cmd.SetArgs(append(tc.args, "--artifacts", t.TempDir()))
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestDeclaredFlagsAreTheDeclaredFields checks that every Config field a
// driver declaration sets has its flag, so that a flag given on the command
// line keeps its value over the declaration's.
func TestDeclaredFlagsAreTheDeclaredFields(t *testing.T) {
	cmd := newConformanceCommand()
	fields := conformance.DeclaredFields()
	if len(declaredFlags) != len(fields) {
		t.Errorf("declaredFlags has %d fields, the declaration sets %d", len(declaredFlags), len(fields))
	}
	for _, f := range fields {
		flag, ok := declaredFlags[f]
		if !ok {
			t.Errorf("field %s has no flag in declaredFlags", f)
			continue
		}
		if cmd.Flags().Lookup(flag) == nil {
			t.Errorf("field %s: flag --%s does not exist", f, flag)
		}
	}
}
