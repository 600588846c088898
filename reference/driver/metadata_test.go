package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/api/metadata"
	"k8s.io/dynamic-resource-allocation/devicemetadata"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// TestRunWritesDeviceMetadata: with DeviceMetadata, a prepare over gRPC
// writes the request's metadata file (v1beta1 first) with the GPU's
// published attributes and a CDI spec that mounts it, whose device ID the
// request's first device carries; unprepare removes both.
func TestRunWritesDeviceMetadata(t *testing.T) {
	t.Parallel()
	root := newTestRoot(t, 0, 1, 3)
	cfg := runConfig(t, root)
	cfg.DeviceMetadata = true
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
	claim := harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu/whole", "gpu-3"))
	client := harnesstest.NewFakeClient(node, claim)
	stop, errc := harnesstest.StartRun(t, t.Context(), func(ctx context.Context) error {
		return run(ctx, cfg, client, staticDiscoverer{testInventory()}, root.lib, nil, newFakeFaults().opener())
	})
	ctx := t.Context()
	published := harnesstest.WaitForSlices(t, ctx, client, errc, 50*time.Millisecond)
	var want map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	for _, d := range published.Items[0].Spec.Devices {
		if d.Name == "gpu-3" {
			want = d.Attributes
		}
	}
	if len(want) == 0 {
		t.Fatal("the published gpu-3 has no attributes to compare with")
	}

	dra := drapbv1.NewDRAPluginClient(harnesstest.Dial(t, filepath.Join(cfg.KubeletPluginDir, "dra.sock")))
	pbClaim := &drapbv1.Claim{Namespace: "test", Name: "one", Uid: uidA}
	prep, err := dra.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: []*drapbv1.Claim{pbClaim}})
	if err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	r := prep.Claims[uidA]
	if r == nil || r.Error != "" || len(r.Devices) != 1 {
		t.Fatalf("NodePrepareResources response %v, want one device and no error", prep)
	}
	metadataID := testDriver + "/metadata=" + uidA + "_gpu"
	if !slices.Contains(r.Devices[0].CdiDeviceIds, metadataID) {
		t.Errorf("CDI device IDs %q lack the metadata device %s", r.Devices[0].CdiDeviceIds, metadataID)
	}

	file := filepath.Join(cfg.KubeletPluginDir, "dra-device-metadata", "test_one", "gpu", "metadata.json")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("metadata file: %v", err)
	}
	var first struct{ APIVersion string }
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&first); err != nil || first.APIVersion != "metadata.resource.k8s.io/v1beta1" {
		t.Errorf("the stream starts with %q (%v), want metadata.resource.k8s.io/v1beta1", first.APIVersion, err)
	}
	var dm metadata.DeviceMetadata
	if err := devicemetadata.DecodeMetadataFromStream(json.NewDecoder(bytes.NewReader(data)), &dm); err != nil {
		t.Fatalf("decode metadata: %v", err)
	}
	if len(dm.Requests) != 1 || dm.Requests[0].Name != "gpu/whole" || len(dm.Requests[0].Devices) != 1 {
		t.Fatalf("metadata requests %+v, want gpu/whole with one device", dm.Requests)
	}
	d := dm.Requests[0].Devices[0]
	if d.Driver != testDriver || d.Pool != testNode || d.Name != "gpu-3" {
		t.Errorf("metadata device %s/%s/%s, want %s/%s/gpu-3", d.Driver, d.Pool, d.Name, testDriver, testNode)
	}
	if diff := cmp.Diff(want, d.Attributes); diff != "" {
		t.Errorf("metadata attributes (-slice +metadata):\n%s", diff)
	}
	spec := filepath.Join(cfg.CDIDir, testDriver+"_metadata_"+uidA+"_gpu.json")
	if _, err := os.Stat(spec); err != nil {
		t.Errorf("metadata CDI spec after prepare: %v", err)
	}

	unprepareClaim(ctx, t, dra, pbClaim)
	for _, p := range []string{file, spec} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after unprepare still exists (stat: %v)", p, err)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("run after cancel: %v", err)
	}
}
