package metadata

import (
	"bytes"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/dynamic-resource-allocation/api/metadata"
	"k8s.io/dynamic-resource-allocation/api/metadata/install"
	metadatav1alpha1 "k8s.io/dynamic-resource-allocation/api/metadata/v1alpha1"
	metadatav1beta1 "k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
)

// encodeMetadata encodes dm once per version, in order, as kubeletplugin's
// metadata writer does (the metadata scheme's pretty JSON serializer).
func encodeMetadata(t *testing.T, dm *metadata.DeviceMetadata, versions ...schema.GroupVersion) []byte {
	t.Helper()
	scheme := install.NewScheme()
	codecs := runtimeserializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer in the metadata scheme")
	}
	var buf bytes.Buffer
	for _, gv := range versions {
		data, err := runtime.Encode(codecs.EncoderForVersion(info.PrettySerializer, gv), dm)
		if err != nil {
			t.Fatalf("encode %s: %v", gv, err)
		}
		buf.Write(data)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

var (
	gpuModel = resourceapi.DeviceAttribute{StringValue: ptr.To("A100")}
	gpuIndex = resourceapi.DeviceAttribute{IntValue: ptr.To[int64](3)}
)

// sampleMetadata is what a driver writes for request gpu/one of claim c
// with one device of pool node-1.
func sampleMetadata() *metadata.DeviceMetadata {
	return &metadata.DeviceMetadata{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-1", Generation: 1},
		Requests: []metadata.DeviceMetadataRequest{{Name: "gpu/one", Devices: []metadata.Device{{
			Driver: "gpu.example.com", Pool: "node-1", Name: "gpu-0",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": gpuModel, "index": gpuIndex},
		}}}},
	}
}

func sampleWant() metadataWant {
	return metadataWant{
		driver: "gpu.example.com", namespace: "ns", Claim: kit.ClaimRecord{Name: "c", UID: "uid-1"}, request: "gpu",
		devices: []observe.Device{{Claim: "c", Request: "gpu/one", Pool: "node-1", Device: "gpu-0",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": gpuModel, "index": gpuIndex}}},
	}
}

// TestParseMetadataStreamOfKubeletplugin decodes what kubeletplugin's
// encoding writes for v1beta1 and v1alpha1 and finds it matches the
// allocation.
func TestParseMetadataStreamOfKubeletplugin(t *testing.T) {
	data := encodeMetadata(t, sampleMetadata(), metadatav1beta1.SchemeGroupVersion, metadatav1alpha1.SchemeGroupVersion)
	objs, err := parseMetadataStream(data)
	if err != nil {
		t.Fatalf("parseMetadataStream: %v\n%s", err, data)
	}
	if len(objs) != 2 || objs[0].APIVersion != "metadata.resource.k8s.io/v1beta1" || objs[1].APIVersion != "metadata.resource.k8s.io/v1alpha1" {
		t.Fatalf("got %d objects, want v1beta1 then v1alpha1: %+v", len(objs), objs)
	}
	if got := checkMetadata("file", objs[0], sampleWant()); len(got) > 0 {
		t.Errorf("checkMetadata: unexpected findings %q", got)
	}
}

// TestParseMetadataStreamRefuses covers the streams the kit refuses.
func TestParseMetadataStreamRefuses(t *testing.T) {
	beta := string(encodeMetadata(t, sampleMetadata(), metadatav1beta1.SchemeGroupVersion))
	alpha := string(encodeMetadata(t, sampleMetadata(), metadatav1alpha1.SchemeGroupVersion))
	other := sampleMetadata()
	other.Requests[0].Devices[0].Name = "gpu-1"
	otherAlpha := string(encodeMetadata(t, other, metadatav1alpha1.SchemeGroupVersion))
	for _, tc := range []struct {
		Name, data, want string
	}{
		{"empty", "", "the stream holds no object"},
		{"oldest first", alpha + beta, "starts with metadata.resource.k8s.io/v1alpha1"},
		{"twice", beta + beta, "version metadata.resource.k8s.io/v1beta1 twice"},
		{"other kind", strings.Replace(beta, `"DeviceMetadata"`, `"Pod"`, 1), `kind "Pod"`},
		{"unknown version", strings.Replace(beta, "v1beta1", "v2", 1), `apiVersion "metadata.resource.k8s.io/v2"`},
		{"unknown field", strings.Replace(beta, `"requests"`, `"requestz"`, 1), "unknown field"},
		{"not JSON", beta + "}", "object 2 of the stream is not JSON"},
		{"versions disagree", beta + otherAlpha, "describes something else"},
	} {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := parseMetadataStream([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestCheckMetadataFindings compares files that differ from the allocation.
func TestCheckMetadataFindings(t *testing.T) {
	for _, tc := range []struct {
		Name   string
		change func(*metadata.DeviceMetadata, *metadataWant)
		want   string
	}{
		{"attribute differs", func(dm *metadata.DeviceMetadata, _ *metadataWant) {
			dm.Requests[0].Devices[0].Attributes["model"] = resourceapi.DeviceAttribute{StringValue: ptr.To("H100")}
		}, `file: device node-1/gpu-0: attribute model is {"string":"H100"} in the metadata, {"string":"A100"} in the ResourceSlice`},
		{"attribute missing", func(dm *metadata.DeviceMetadata, _ *metadataWant) {
			delete(dm.Requests[0].Devices[0].Attributes, "index")
		}, "attribute index is {\"int\":3} in the ResourceSlice, missing in the metadata"},
		{"attribute extra", func(_ *metadata.DeviceMetadata, w *metadataWant) {
			w.devices[0].Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": gpuModel}
		}, "attribute index is {\"int\":3} in the metadata, the ResourceSlice has no such attribute"},
		{"subrequest dropped", func(dm *metadata.DeviceMetadata, _ *metadataWant) {
			dm.Requests[0].Name = "gpu"
		}, `request "gpu", want "gpu/one"`},
		{"device missing", func(_ *metadata.DeviceMetadata, w *metadataWant) {
			w.devices = append(w.devices, observe.Device{Claim: "c", Request: "gpu/one", Pool: "node-1", Device: "gpu-9"})
		}, "device node-1/gpu-9 is allocated for request gpu/one, the file does not list it"},
		{"device not allocated", func(dm *metadata.DeviceMetadata, _ *metadataWant) {
			dm.Requests[0].Devices = append(dm.Requests[0].Devices, metadata.Device{Driver: "gpu.example.com", Pool: "node-1", Name: "gpu-7"})
		}, "lists device node-1/gpu-7, which is not allocated"},
		{"other driver", func(dm *metadata.DeviceMetadata, _ *metadataWant) {
			dm.Requests[0].Devices[0].Driver = "nic.example.com"
		}, `device node-1/gpu-0 of driver "nic.example.com"`},
		{"other claim", func(dm *metadata.DeviceMetadata, _ *metadataWant) {
			dm.UID = "uid-2"
		}, "metadata names claim ns/c (uid uid-2), want ns/c (uid uid-1)"},
		{"template claim without podClaimName", func(_ *metadata.DeviceMetadata, w *metadataWant) {
			w.entry = "accel"
		}, `podClaimName is unset, want the pod's claim entry "accel"`},
		{"named claim with podClaimName", func(dm *metadata.DeviceMetadata, _ *metadataWant) {
			dm.PodClaimName = ptr.To("accel")
		}, `podClaimName is "accel" for a claim the pod names`},
	} {
		t.Run(tc.Name, func(t *testing.T) {
			dm, want := sampleMetadata(), sampleWant()
			tc.change(dm, &want)
			objs, err := parseMetadataStream(encodeMetadata(t, dm, metadatav1beta1.SchemeGroupVersion))
			if err != nil {
				t.Fatalf("parseMetadataStream: %v", err)
			}
			got := checkMetadata("file", objs[0], want)
			if !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("findings %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// TestMetadataFilePath spells out the two layouts of dra-1.37-spec.md §10.
func TestMetadataFilePath(t *testing.T) {
	if got, want := metadataFilePath("gpu.example.com", "entry", "c", false, "gpu"),
		"/var/run/kubernetes.io/dra-device-attributes/resourceclaims/c/gpu/gpu.example.com-metadata.json"; got != want {
		t.Errorf("named claim: got %s, want %s", got, want)
	}
	if got, want := metadataFilePath("gpu.example.com", "entry", "pod-entry-x7k2", true, "gpu"),
		"/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/entry/gpu/gpu.example.com-metadata.json"; got != want {
		t.Errorf("template claim: got %s, want %s", got, want)
	}
}

// FuzzParseMetadataStream feeds arbitrary bytes to the parser: it must
// not panic, and what it accepts starts with the newest version.
func FuzzParseMetadataStream(f *testing.F) {
	f.Add([]byte(`{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1"}`))
	f.Add([]byte(`{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1","requests":[{"name":"a/b","devices":[{"driver":"d","pool":"p","name":"n","attributes":{"x":{"int":1}}}]}]}{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1alpha1"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := parseMetadataStream(data)
		if err != nil {
			return
		}
		if len(objs) == 0 || objs[0].APIVersion != metadataVersions[0] {
			t.Errorf("accepted a stream that does not start with %s: %+v", metadataVersions[0], objs)
		}
	})
}
