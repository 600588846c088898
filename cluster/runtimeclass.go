package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MIGManagerRuntimeClass is the RuntimeClass (and containerd runtime
// handler) for a DRA driver that changes MIG devices without being
// privileged. Its containers may read the two MIG management capability
// devices, and nothing else beyond what every container may: NVML refuses a
// MIG change to a process that cannot read the MIG config capability, and a
// container's device cgroup refuses that read unless the runtime grants it
// (Kubernetes has no pod field for a device grant).
const MIGManagerRuntimeClass = "drakit-mig-manager"

// nvidiaCapsMajor is the major of the emulator's nvidia-caps character
// devices (emulator/render.NvidiaCapsMajor; a test keeps the two equal).
// Minor 1 is the MIG config capability (/proc/driver/nvidia/capabilities/
// mig/config), minor 2 the MIG monitor capability.
const nvidiaCapsMajor = 235

// migManagerDevices are the device cgroup rules MIGManagerRuntimeClass adds.
var migManagerDevices = []map[string]any{
	{"allow": true, "type": "c", "major": nvidiaCapsMajor, "minor": 1, "access": "r"},
	{"allow": true, "type": "c", "major": nvidiaCapsMajor, "minor": 2, "access": "r"},
}

func migManagerSpecPath(cfg Config) string {
	return filepath.Join(containerdDir(cfg), "base-spec-"+MIGManagerRuntimeClass+".json")
}

// writeMIGManagerSpec writes the base OCI spec of the MIG manager runtime:
// containerd's default spec (ctr oci spec) with migManagerDevices appended to
// its device cgroup rules. The CRI applies each container's settings on top
// of it, as it does on its own default.
func writeMIGManagerSpec(ctx context.Context, cfg Config) error {
	ctr, err := BinaryPath(cfg, "ctr")
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, ctr, "oci", "spec")
	cmd.Env = childEnv(cfg)
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("write the %s base spec: ctr oci spec: %w", MIGManagerRuntimeClass, err)
	}
	b, err := addDeviceRules(out, migManagerDevices)
	if err != nil {
		return fmt.Errorf("write the %s base spec: %w", MIGManagerRuntimeClass, err)
	}
	return writeFileAtomic(migManagerSpecPath(cfg), b, 0o644)
}

// addDeviceRules appends device cgroup rules to an OCI spec's
// linux.resources.devices, keeping everything else as it is.
func addDeviceRules(spec []byte, rules []map[string]any) ([]byte, error) {
	var s map[string]any
	if err := json.Unmarshal(spec, &s); err != nil {
		return nil, fmt.Errorf("parse OCI spec: %w", err)
	}
	linux, _ := s["linux"].(map[string]any)
	if linux == nil {
		return nil, fmt.Errorf("OCI spec has no linux section")
	}
	resources, _ := linux["resources"].(map[string]any)
	if resources == nil {
		resources = map[string]any{}
		linux["resources"] = resources
	}
	devices, _ := resources["devices"].([]any)
	for _, r := range rules {
		devices = append(devices, r)
	}
	resources["devices"] = devices
	return json.MarshalIndent(s, "", "  ")
}

// migManagerRuntimeConfig is containerd's runtime handler section for the
// MIG manager runtime.
func migManagerRuntimeConfig(cfg Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.%s]\n", MIGManagerRuntimeClass)
	b.WriteString("    runtime_type = \"io.containerd.runc.v2\"\n")
	fmt.Fprintf(&b, "    base_runtime_spec = %s\n", tomlString(migManagerSpecPath(cfg)))
	return b.String()
}

// ensureRuntimeClasses creates the RuntimeClass of the MIG manager runtime.
// Idempotent.
func ensureRuntimeClasses(ctx context.Context, cfg Config) error {
	client, err := Client(cfg)
	if err != nil {
		return err
	}
	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: MIGManagerRuntimeClass, Labels: map[string]string{"app.kubernetes.io/managed-by": "drakit"}},
		Handler:    MIGManagerRuntimeClass,
	}
	_, err = client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create RuntimeClass %s: %w", MIGManagerRuntimeClass, err)
	}
	return nil
}
