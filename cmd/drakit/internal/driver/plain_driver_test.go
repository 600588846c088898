package driver

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
	"drakit.dev/drakit/reference/deploy"
)

// TestPlainDriverFlagsMapOntoOptions checks that every deploy.PlainOptions
// field has exactly one flag and every flag sets exactly one field.
func TestPlainDriverFlagsMapOntoOptions(t *testing.T) {
	opts := deploy.DefaultPlainOptions()
	fs := pflag.NewFlagSet("plain-driver", pflag.ContinueOnError)
	bindPlainDriverFlags(fs, &opts)
	clitest.CheckFlagsMapOneToOne(t, fs, &opts)
}

func TestPlainDriverManifestsCommand(t *testing.T) {
	t.Setenv("DRAKIT_RUN_DIR", "/run/k")
	t.Setenv("DRAKIT_CDI_DIR", "/run/k/cdi")
	t.Setenv("DRAKIT_KUBELET_ROOT_DIR", "/run/k/kubelet")
	out := manifestsOutput(t, NewPlainDriverCommand, "--defect", "leave-cdi-spec", "--devices", "3")
	checkManifestsOutput(t, out, 8, "an admission policy and its binding, one DeviceClass",
		"path: /run/k/plain-driver\n",
		"path: /run/k/kubelet/plugins_registry\n",
		"path: /run/k/kubelet/plugins/plain.drakit.dev\n",
		"path: /run/k/cdi\n",
		"- --defect=leave-cdi-spec\n",
		"- --devices=3\n",
		"kind: DeviceClass",
		"namespace: drakit-plain\n",
	)
	if strings.Contains(out, "MKNOD") || strings.Contains(out, "privileged: true") {
		t.Errorf("plain driver manifests grant privileges:\n%s", out)
	}
}

// TestPlainDriverValidatesBeforeConnecting: deploy, delete and manifests
// refuse bad flags, naming them, before the kubeconfig is read.
func TestPlainDriverValidatesBeforeConnecting(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"defect", "slow", `Defect (--defect): unknown defect "slow" (known: extra-device, wrong-device, missing-env, env-wrong-value, mount-missing, mount-writable, device-node-missing, extra-device-node, no-cdi-edits, unresolvable-cdi-device, config-ignored, duplicate-device-names, duplicate-identity, attribute-type, counters-overcommitted, counters-underconsumed, prepare-fails, prepare-slow, shares-refused, admin-access-refused, not-idempotent, unprepare-fails, leave-cdi-spec, unprepare-keeps-device, state-lost-on-restart; empty for none)`},
		{"devices", "0", "Devices (--devices): 0 devices: must be between 1 and 128"},
		{"state-dir", "/etc", `StateDir (--state-dir) "/etc" is a system directory`},
	} {
		checkValidatesBeforeConnecting(t, NewPlainDriverCommand, tc.flag, tc.value, tc.want)
	}
}

// TestPlainDriverVariantManifests: --variant names the deployment, the
// driver and the state directory after the variant, and --style adds the
// style's device classes.
func TestPlainDriverVariantManifests(t *testing.T) {
	t.Setenv("DRAKIT_RUN_DIR", "/run/k")
	t.Setenv("DRAKIT_CDI_DIR", "/run/k/cdi")
	t.Setenv("DRAKIT_KUBELET_ROOT_DIR", "/run/k/kubelet")
	out := manifestsOutput(t, NewPlainDriverCommand, "--variant", "parts", "--style", "partitions", "--http-port", "9501")
	checkManifestsOutput(t, out, 9, "an admission policy and its binding, two DeviceClasses",
		"path: /run/k/plain-driver-parts\n",
		"path: /run/k/kubelet/plugins/parts.plain.drakit.dev\n",
		"- --driver-name=parts.plain.drakit.dev\n",
		"- --style=partitions\n",
		"name: partition.parts.plain.drakit.dev\n",
		"namespace: drakit-plain-parts\n",
		`request.userInfo.username == "system:serviceaccount:drakit-plain-parts:drakit-plain-parts"`,
	)
	if strings.Contains(out, "namespace: drakit-plain\n") {
		t.Errorf("variant manifests use the default namespace:\n%s", out)
	}
}
