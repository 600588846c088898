package nodeimage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
)

// CRIBaseSpec is the base OCI runtime spec kind's containerd config.toml
// names (base_runtime_spec).
const CRIBaseSpec = "/etc/containerd/cri-base.json"

// mountProductFiles is the createContainer hook kind adds to every
// container (it bind-mounts the node's product_name and product_uuid).
const mountProductFiles = "/kind/bin/mount-product-files.sh"

// criBase turns `ctr oci spec` output into kind's cri-base.json as its base
// Dockerfile does with jq: the hook appended to hooks.createContainer and
// process.rlimits removed.
func criBase(spec []byte) ([]byte, error) {
	var s map[string]any
	if err := json.Unmarshal(spec, &s); err != nil {
		return nil, fmt.Errorf("decode OCI spec: %w", err)
	}
	hooks, _ := s["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	create, _ := hooks["createContainer"].([]any)
	hooks["createContainer"] = append(create, map[string]any{"path": mountProductFiles})
	s["hooks"] = hooks
	if process, ok := s["process"].(map[string]any); ok {
		delete(process, "rlimits")
	}
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode OCI spec: %w", err)
	}
	return append(out, '\n'), nil
}

// ociSpec runs `ctr oci spec`, containerd's default spec (no daemon needed).
func ociSpec(ctx context.Context, ctr string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, ctr, "oci", "spec")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("run %s oci spec: %w: %s", ctr, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}
