package environment

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"drakit.dev/drakit/cluster"
)

func localConfig(t *testing.T, nodes int) cluster.Config {
	cfg := cluster.DefaultConfig()
	cfg.RunDir = filepath.Join(t.TempDir(), "run")
	cfg.Nodes = nodes
	return cfg
}

// TestLocalExportLogs: node 1's logs (the control plane's among them) go
// to dest, node 2's to dest/node-2, replacing an earlier export; no run dir
// exports nothing.
func TestLocalExportLogs(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cfg := localConfig(t, 2)
	l := NewLocal(cfg, "drakit", "")
	dest := filepath.Join(t.TempDir(), "logs")
	if err := l.ExportLogs(ctx, dest); err != nil {
		t.Fatalf("without a run dir: %v", err)
	}
	files := map[string]string{
		"logs/kube-apiserver.log":     "apiserver",
		"logs/emulator-watch.log":     "PF 0000:0c:00.0: 2 VFs",
		"nodes/2/logs/kubelet.log":    "kubelet 2",
		"nodes/2/logs/pods/x/y/0.log": "container",
	}
	for p, content := range files {
		p = filepath.Join(cfg.RunDir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dest, "emulator-watch.log"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.ExportLogs(ctx, dest); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		"kube-apiserver.log": "apiserver", "emulator-watch.log": "PF 0000:0c:00.0: 2 VFs",
		"node-2/kubelet.log": "kubelet 2", "node-2/pods/x/y/0.log": "container",
	} {
		b, err := os.ReadFile(filepath.Join(dest, rel))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q (%v), want %q", rel, b, err, want)
		}
	}
}

// TestLocalNodes: the nodes' names and paths are the cluster's, and
// RunOnNode runs on the host with the provider's drakit binary, refusing
// a node that is not the cluster's.
func TestLocalNodes(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cfg := localConfig(t, 2)
	out := filepath.Join(t.TempDir(), "out")
	script := filepath.Join(t.TempDir(), "fake-drakit")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" >>"+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := NewLocal(cfg, script, "/shim.so")
	names, err := l.NodeNames(ctx)
	if err != nil || !slices.Equal(names, []string{"127.0.0.1", "127.0.0.2"}) {
		t.Fatalf("NodeNames: %v %v", names, err)
	}
	n2, err := l.Node(ctx, "127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	want := Node{
		Name: "127.0.0.2", KubeletRootDir: filepath.Join(cfg.KubeletRootBase, "k2"), CDIDir: filepath.Join(cfg.RunDir, "nodes/2/cdi"),
		EmulatorRoot: filepath.Join(cfg.RunDir, "nodes/2/emulator"), ShimLibrary: "/shim.so", StateDir: filepath.Join(cfg.RunDir, "nodes/2"),
		LogDir: filepath.Join(cfg.RunDir, "nodes/2/logs"), OnHost: true, HTTPPortOffset: 10,
	}
	if n2 != want {
		t.Errorf("Node(127.0.0.2) = %+v, want %+v", n2, want)
	}
	if err := l.RunOnNode(ctx, "127.0.0.2", []string{"drakit", "emulator", "render", "--root", n2.EmulatorRoot}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); strings.TrimSpace(string(b)) != "emulator render --root "+n2.EmulatorRoot {
		t.Errorf("the host ran %q", b)
	}
	if err := l.RunOnNode(ctx, "10.0.0.1", []string{"drakit", "version"}); err == nil || !strings.Contains(err.Error(), "not a node of the local cluster") {
		t.Errorf("RunOnNode on a stranger: %v", err)
	}
	if err := l.RunOnNode(ctx, "127.0.0.1", []string{"false"}); err == nil || !strings.Contains(err.Error(), "run false") {
		t.Errorf("a failing command: %v, want its error", err)
	}
	if _, err := l.CreateWithConfig(ctx, "kind.yaml"); err == nil {
		t.Error("CreateWithConfig: no error, want a refusal")
	}
}
