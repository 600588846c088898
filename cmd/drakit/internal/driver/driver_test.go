package driver

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
	"drakit.dev/drakit/reference/deploy"
)

// TestDriverFlagsMapOntoOptions checks that every deploy.Options field has
// exactly one flag and every flag sets exactly one field: the options of
// every kind are bound once.
func TestDriverFlagsMapOntoOptions(t *testing.T) {
	opts := deploy.DefaultOptions(deploy.KindGPU)
	fs := pflag.NewFlagSet("driver", pflag.ContinueOnError)
	bindOptions(fs, &opts)
	clitest.CheckFlagsMapOneToOne(t, fs, &opts)
}

// manifests runs drakit driver manifests with args and returns what it
// prints.
func manifests(t *testing.T, args ...string) string {
	t.Helper()
	cmd := NewDriverCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(append([]string{"manifests"}, args...))
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// checkManifests checks that out holds every one of wants and objects
// YAML documents.
func checkManifests(t *testing.T, out string, objects int, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("manifests output lacks %q", want)
		}
	}
	if n := strings.Count(out, "\n---\n"); n != objects-1 {
		t.Errorf("manifests output has %d separators, want %d (%d objects)", n, objects-1, objects)
	}
}

// TestDriverManifestsOfEachKind: each kind's manifests take the
// environment's paths and the kind's defaults (its names, port and state
// directory) and its own flags.
func TestDriverManifestsOfEachKind(t *testing.T) {
	t.Setenv("DRAKIT_EMULATOR_ROOT", "/env/emulator")
	t.Setenv("DRAKIT_RUN_DIR", "/run/k")
	t.Setenv("DRAKIT_CDI_DIR", "/run/k/cdi")
	t.Setenv("DRAKIT_KUBELET_ROOT_DIR", "/run/k/kubelet")
	for _, tc := range []struct {
		args    []string
		objects int
		wants   []string
	}{
		{nil, 9, []string{"path: /env/emulator\n", "path: /run/k/kubelet/plugins/gpu.drakit.dev\n", "name: mig.gpu.drakit.dev\n",
			"namespace: drakit-system\n", "- --http-endpoint=127.0.0.1:9470\n", "- MKNOD\n", "privileged: false\n"}},
		{[]string{"--driver-root", "/other/emulator", "--imex-channels", "8"}, 16, []string{"path: /other/emulator\n", "name: imex.gpu.drakit.dev\n",
			"- --channels=8\n"}},
		{[]string{"--kind", "nic", "--vfs-per-pf", "2"}, 9, []string{"path: /env/emulator/sys\n", "- --vfs-per-pf=2\n", "name: vf.nic.drakit.dev\n",
			"namespace: drakit-nic\n", "- --http-endpoint=127.0.0.1:9471\n"}},
		{[]string{"--kind", "cpu"}, 8, []string{"path: /run/k/cpu-driver\n", "path: /env/emulator/sys/devices/system/node\n", "namespace: drakit-cpu\n"}},
		{[]string{"--kind", "tpu", "--shapes", "2x2x1"}, 15, []string{"- --shapes=2x2x1\n", "name: subslice.tpu.drakit.dev\n", "namespace: drakit-tpu\n"}},
		{[]string{"--kind", "plain", "--defect", "leave-cdi-spec", "--devices", "3"}, 8, []string{"path: /run/k/plain-driver\n",
			"- --defect=leave-cdi-spec\n", "- --devices=3\n", "namespace: drakit-plain\n", "image: drakit.dev/driver:dev\n"}},
		{[]string{"--kind", "plain", "--variant", "parts", "--style", "partitions", "--http-port", "9501"}, 9, []string{
			"path: /run/k/plain-driver-parts\n", "path: /run/k/kubelet/plugins/parts.plain.drakit.dev\n", "- --driver-name=parts.plain.drakit.dev\n",
			"- --style=partitions\n", "name: partition.parts.plain.drakit.dev\n", "namespace: drakit-plain-parts\n",
			`request.userInfo.username == "system:serviceaccount:drakit-plain-parts:drakit-plain-parts"`}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := manifests(t, tc.args...)
			checkManifests(t, out, tc.objects, tc.wants...)
			if gpu := len(tc.args) == 0 || tc.args[0] != "--kind"; !gpu && strings.Contains(out, "MKNOD") {
				t.Errorf("%s manifests grant MKNOD", tc.args[1])
			}
		})
	}
	if got := manifests(t, "--privileged"); !strings.Contains(got, "privileged: true\n") || strings.Contains(got, "capabilities:") {
		t.Errorf("--privileged manifests are not privileged:\n%s", got)
	}
}

// TestDriverValidatesBeforeConnecting: deploy, delete and manifests refuse
// bad flags, naming them, with ErrInvalidOptions, before they read the
// kubeconfig (an unreachable one): host paths that are system
// directories, a kind's bad options and another kind's options.
func TestDriverValidatesBeforeConnecting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cdi-dir", "/etc"}, `CDIDir (--cdi-dir) "/etc" is a system directory: the driver pod would mount it from the host`},
		{[]string{"--driver-root", "/"}, `HostRoot (--host-root) "/" is a system directory`},
		{[]string{"--kubelet-root-dir", "/var"}, `KubeletRootDir (--kubelet-root-dir) "/var" is a system directory`},
		{[]string{"--cdi-dir", "/usr/share/cdi"}, `CDIDir (--cdi-dir) "/usr/share/cdi" lies in /usr, a system directory`},
		{[]string{"--host-root", "relative"}, `HostRoot (--host-root) "relative" must be a clean absolute path`},
		{[]string{"--kind", "fpga"}, `Kind (--kind) "fpga": want gpu, nic, cpu, tpu or plain`},
		{[]string{"--kind", "nic", "--vfs-per-pf", "999"}, "VFsPerPF (--vfs-per-pf) 999 is not between 0 and 256"},
		{[]string{"--kind", "nic", "--imex-channels", "8"}, "IMEXChannels (--imex-channels) is an option of kind gpu, not of nic"},
		{[]string{"--vfs-per-pf", "2"}, "VFsPerPF (--vfs-per-pf) is an option of kind nic, not of gpu"},
		{[]string{"--kind", "plain", "--defect", "slow"}, `Defect (--defect): unknown defect "slow"`},
		{[]string{"--kind", "plain", "--devices", "0"}, "Devices (--devices): 0 devices: must be between 1 and 128"},
		{[]string{"--kind", "plain", "--state-dir", "/etc"}, `StateDir (--state-dir) "/etc" is a system directory`},
		{[]string{"--kind", "tpu", "--state-dir", "/srv/x"}, "StateDir (--state-dir) is an option of kind cpu or plain, not of tpu"},
	} {
		for _, sub := range []string{"manifests", "deploy", "delete"} {
			cmd := NewDriverCommand()
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			args := append([]string{sub}, tc.args...)
			if sub != "manifests" {
				args = append(args, "--kubeconfig", "/nonexistent/kubeconfig")
			}
			cmd.SetArgs(args)
			err := cmd.Execute()
			if !errors.Is(err, deploy.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %s: got %v, want ErrInvalidOptions with %q", sub, strings.Join(tc.args, " "), err, tc.want)
			}
		}
	}
}
