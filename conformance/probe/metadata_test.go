package probe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCollectMetadata reports the files below the metadata root by their
// container path, and survives a round trip through the report line.
func TestCollectMetadata(t *testing.T) {
	root := filepath.Join(t.TempDir(), "dra-device-attributes")
	files := map[string]string{
		"resourceclaims/c/gpu/gpu.example.com-metadata.json":             `{"kind":"DeviceMetadata"}`,
		"resourceclaimtemplates/accel/gpu/gpu.example.com-metadata.json": "{}\n{}\n",
	}
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A symbolic link is not a metadata file.
	if err := os.Symlink("c", filepath.Join(root, "resourceclaims", "link")); err != nil {
		t.Fatal(err)
	}
	report, err := Collect(context.Background(), Options{MountInfo: "/proc/self/mountinfo", DevRoot: t.TempDir(), Environ: []string{}, NVML: &fakeNVML{}, MetadataRoot: root})
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := map[string]string{}
	for rel, content := range files {
		want[MetadataPath+"/"+rel] = content
	}
	if diff := cmp.Diff(want, report.Metadata); diff != "" {
		t.Errorf("metadata files (-want +got):\n%s", diff)
	}
	line, err := Format(report)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseLogs(line + "\n")
	if err != nil {
		t.Fatalf("ParseLogs: %v", err)
	}
	if diff := cmp.Diff(want, back.Metadata); diff != "" {
		t.Errorf("metadata files after the report line (-want +got):\n%s", diff)
	}
}

// TestReadMetadataNone: a missing directory and an empty root have none;
// an oversized file is an error.
func TestReadMetadataNone(t *testing.T) {
	for _, root := range []string{"", filepath.Join(t.TempDir(), "missing")} {
		got, err := readMetadata(root)
		if err != nil || got != nil {
			t.Errorf("readMetadata(%q) = %v, %v; want nil, nil", root, got, err)
		}
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "big.json"), make([]byte, maxMetadataFile+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readMetadata(root); err == nil || !strings.Contains(err.Error(), "more than the probe reports") {
		t.Errorf("readMetadata of an oversized file: got %v, want an error", err)
	}
}
