package kind

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
)

// NodeKitDir is where the kit's files are installed inside a node: the
// drakit binary in bin/, the NVML shim and the emulator's nvidia-smi in
// lib/, a profile file in share/.
const NodeKitDir = "/opt/drakit"

// NodeDrakit is the drakit binary RenderCommands installs in a node.
var NodeDrakit = path.Join(NodeKitDir, "bin", "drakit")

// Node paths of the other installed files.
var (
	nodeShim      = path.Join(NodeKitDir, "lib", "libnvidia-ml.so")
	nodeNvidiaSMI = path.Join(NodeKitDir, "lib", "nvidia-smi")
	nodeProfile   = path.Join(NodeKitDir, "share", "profile.yaml")
	// nodeClusterProfile is where a cluster profile file is installed.
	nodeClusterProfile = path.Join(NodeKitDir, "share", "cluster-profile.yaml")
)

// RenderOptions say what to render in a node and with which host files.
type RenderOptions struct {
	// Profile is the name of a built-in node profile (drakit emulator
	// profiles); ProfileFile a host file holding one. ClusterProfile and
	// ClusterProfileFile are the same for a cluster profile (drakit
	// emulator cluster-profile), whose node named like the kind node is
	// rendered. Exactly one of the four is set.
	Profile            string
	ProfileFile        string
	ClusterProfile     string
	ClusterProfileFile string
	// UUIDSeed seeds the node's GPU UUIDs and NIC MACs; default: the node's
	// name, so that every node's hardware is distinct. Not with a cluster
	// profile, which seeds its nodes itself.
	UUIDSeed string
	// Drakit is the host's drakit binary (_output/bin/drakit). The node
	// image is Debian like the build host, so the dynamically linked
	// binary runs there.
	Drakit string
	// Shim is the built NVML shim (_output/lib/libnvidia-ml.so); empty:
	// no NVML library is installed in the emulator root.
	Shim string
	// NvidiaSMI is the emulator's nvidia-smi; default: nvidia-smi beside
	// Shim, as drakit emulator build-shim writes it. Only with Shim.
	NvidiaSMI string
}

// NodeCommand is one command run in a node container.
type NodeCommand struct {
	// Argv is the command and its arguments.
	Argv []string
	// Stdin is a host file fed to the command's standard input; empty:
	// none.
	Stdin string
}

// installScript writes its standard input to $1 with mode $2, through a
// temporary file so that a half-copied binary never sits at $1.
const installScript = `set -eu; mkdir -p "$(dirname "$1")"; cat >"$1.tmp"; chmod "$2" "$1.tmp"; mv -f "$1.tmp" "$1"`

// installCommand copies host file src to dst in the node, the docker cp of
// a node's exec: sh reading the file from standard input.
func installCommand(src, dst, mode string) NodeCommand {
	return NodeCommand{Argv: []string{"sh", "-c", installScript, "install", dst, mode}, Stdin: src}
}

// RenderCommands returns the commands that render node's emulated hardware
// inside it: install drakit, the NVML shim with nvidia-smi and the profile
// file under NodeKitDir, then `drakit emulator render` into EmulatorRoot.
// The render creates the GPUs' character devices (mknod) below
// EmulatorRoot/dev, where the reference driver's CDI specs point; a kind
// node is a privileged container, which has CAP_MKNOD.
func RenderCommands(node string, o RenderOptions) ([]NodeCommand, error) {
	var errs []error
	if node == "" {
		errs = append(errs, errors.New("node: required"))
	}
	set := 0
	for _, p := range []string{o.Profile, o.ProfileFile, o.ClusterProfile, o.ClusterProfileFile} {
		if p != "" {
			set++
		}
	}
	if set != 1 {
		errs = append(errs, errors.New("profile: exactly one of a profile name, a profile file, a cluster profile name and a cluster profile file is required"))
	}
	if o.UUIDSeed != "" && (o.ClusterProfile != "" || o.ClusterProfileFile != "") {
		errs = append(errs, errors.New("uuidSeed: not with a cluster profile (it seeds its nodes itself)"))
	}
	if o.Drakit == "" {
		errs = append(errs, errors.New("drakit: required"))
	}
	if o.NvidiaSMI != "" && o.Shim == "" {
		errs = append(errs, errors.New("nvidiaSMI: needs shim"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("plan render on node %q: %w", node, err)
	}
	cmds := []NodeCommand{installCommand(o.Drakit, NodeDrakit, "0755")}
	render := []string{NodeDrakit, "emulator", "render"}
	switch {
	case o.ClusterProfile != "":
		render = append(render, "--cluster-profile", o.ClusterProfile, "--node", node)
	case o.ClusterProfileFile != "":
		cmds = append(cmds, installCommand(o.ClusterProfileFile, nodeClusterProfile, "0644"))
		render = append(render, "--cluster-profile", nodeClusterProfile, "--node", node)
	default:
		profile := o.Profile
		if o.ProfileFile != "" {
			cmds = append(cmds, installCommand(o.ProfileFile, nodeProfile, "0644"))
			profile = nodeProfile
		}
		seed := o.UUIDSeed
		if seed == "" {
			seed = node
		}
		render = append(render, "--profile", profile, "--uuid-seed", seed)
	}
	render = append(render, "--root", EmulatorRoot)
	if o.Shim != "" {
		smi := o.NvidiaSMI
		if smi == "" {
			smi = filepath.Join(filepath.Dir(o.Shim), "nvidia-smi")
		}
		cmds = append(cmds, installCommand(o.Shim, nodeShim, "0755"), installCommand(smi, nodeNvidiaSMI, "0755"))
		render = append(render, "--shim", nodeShim, "--nvidia-smi", nodeNvidiaSMI)
	}
	return append(cmds, NodeCommand{Argv: render}), nil
}

// UntaintCommand removes the control-plane taint from node, run in the
// control-plane node with its admin kubeconfig: kind keeps the taint on a
// cluster with workers, and drakit tests on every node.
func UntaintCommand(node string) NodeCommand {
	return NodeCommand{Argv: []string{"kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "taint", "nodes", node, "node-role.kubernetes.io/control-plane-"}}
}
