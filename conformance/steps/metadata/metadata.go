package metadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metadatav1alpha1 "k8s.io/dynamic-resource-allocation/api/metadata/v1alpha1"
	metadatav1beta1 "k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
)

// Device metadata files (KEP-5304, dra-1.37-spec.md §10): the paths a
// container finds them at, and the JSON stream each holds.
const (
	// metadataKind is the kind of every object of a metadata file.
	metadataKind = "DeviceMetadata"
	// metadataClaimsDir and metadataTemplatesDir are the directories
	// below probe.MetadataPath of claims a pod names (by claim name) and
	// of claims made from a template (by the pod's claim entry).
	metadataClaimsDir    = "resourceclaims"
	metadataTemplatesDir = "resourceclaimtemplates"
)

// metadataVersions are the metadata.resource.k8s.io versions of 1.37.2's
// kubeletplugin, newest first: a file's stream starts with the newest.
var metadataVersions = []string{metadatav1beta1.SchemeGroupVersion.String(), metadatav1alpha1.SchemeGroupVersion.String()}

// metadataFilePath is where a container finds the metadata file of a
// driver for one request of a claim: below resourceclaims/<claim name> for
// a claim the pod names, below resourceclaimtemplates/<entry> for one made
// from a template (entry is the pod's spec.resourceClaims[].name). request
// is the request's name, without a subrequest.
func metadataFilePath(driver, entry, claim string, fromTemplate bool, request string) string {
	if fromTemplate {
		return path.Join(probe.MetadataPath, metadataTemplatesDir, entry, request, driver+"-metadata.json")
	}
	return path.Join(probe.MetadataPath, metadataClaimsDir, claim, request, driver+"-metadata.json")
}

// parseMetadataStream decodes a metadata file: a JSON stream of
// DeviceMetadata objects, one per version, newest first. Both versions of
// 1.37.2 have the same fields, so each object decodes strictly into the
// v1beta1 type, keeping its apiVersion. It fails on an empty stream, an
// object of another kind or an unknown version, a version twice, a first
// object that is not of the newest version, unknown fields, and on
// objects that describe different things.
func parseMetadataStream(data []byte) ([]metadatav1beta1.DeviceMetadata, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []metadatav1beta1.DeviceMetadata
	for i := 0; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("object %d of the stream is not JSON: %w", i+1, err)
		}
		obj, err := decodeMetadataObject(raw)
		if err != nil {
			return nil, fmt.Errorf("object %d of the stream: %w", i+1, err)
		}
		for _, prev := range out {
			if prev.APIVersion == obj.APIVersion {
				return nil, fmt.Errorf("object %d of the stream: version %s twice", i+1, obj.APIVersion)
			}
		}
		out = append(out, obj)
	}
	if len(out) == 0 {
		return nil, errors.New("the stream holds no object")
	}
	if out[0].APIVersion != metadataVersions[0] {
		return nil, fmt.Errorf("the stream starts with %s, want the newest version %s first", out[0].APIVersion, metadataVersions[0])
	}
	for _, obj := range out[1:] {
		if !sameMetadata(out[0], obj) {
			return nil, fmt.Errorf("the %s object describes something else than the %s one", obj.APIVersion, out[0].APIVersion)
		}
	}
	return out, nil
}

// decodeMetadataObject decodes one object of a metadata stream strictly.
func decodeMetadataObject(raw []byte) (metadatav1beta1.DeviceMetadata, error) {
	var obj metadatav1beta1.DeviceMetadata
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return obj, fmt.Errorf("decode DeviceMetadata: %w", err)
	}
	if obj.Kind != metadataKind {
		return obj, fmt.Errorf("kind %q, want %s", obj.Kind, metadataKind)
	}
	if !slices.Contains(metadataVersions, obj.APIVersion) {
		return obj, fmt.Errorf("apiVersion %q, want one of %s", obj.APIVersion, strings.Join(metadataVersions, ", "))
	}
	return obj, nil
}

// sameMetadata says whether two objects of a stream describe the same
// thing: everything but their apiVersion is equal.
func sameMetadata(a, b metadatav1beta1.DeviceMetadata) bool {
	a.TypeMeta = b.TypeMeta
	return apiequality.Semantic.DeepEqual(a, b)
}

// metadataWant is what a metadata file must say, from the API server: the
// claim, the pod's claim entry for a claim made from a template, and the
// driver's devices allocated to the file's request.
type metadataWant struct {
	driver, namespace string
	Claim             kit.ClaimRecord
	// entry is the pod's claim entry of a claim made from a template;
	// empty for a claim the pod names.
	entry string
	// request is the base request of the file; devices the driver's
	// devices the claim is allocated for it, each with its Request as the
	// allocation result names it (request/subrequest for a prioritized
	// list) and its ResourceSlice attributes.
	request string
	devices []observe.Device
}

// checkMetadata compares a file's newest object with want, as findings
// that name the file (label): its claim's name, namespace and UID, the
// pod's claim entry (podClaimName), a single request named as the
// allocation result names it, and exactly the allocated devices, each with
// the driver, pool, name and the attributes of its ResourceSlice entry.
func checkMetadata(label string, obj metadatav1beta1.DeviceMetadata, want metadataWant) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, label+": "+fmt.Sprintf(format, args...)) }
	if obj.Name != want.Claim.Name || obj.Namespace != want.namespace || obj.UID != want.Claim.UID {
		bad("metadata names claim %s/%s (uid %s), want %s/%s (uid %s)", obj.Namespace, obj.Name, obj.UID, want.namespace, want.Claim.Name, want.Claim.UID)
	}
	switch {
	case want.entry == "" && obj.PodClaimName != nil:
		bad("podClaimName is %q for a claim the pod names, want none", *obj.PodClaimName)
	case want.entry != "" && (obj.PodClaimName == nil || *obj.PodClaimName != want.entry):
		bad("podClaimName is %s, want the pod's claim entry %q", describeOptional(obj.PodClaimName), want.entry)
	}
	names := map[string]bool{}
	for _, d := range want.devices {
		names[d.Request] = true
	}
	if len(names) != 1 {
		// A request's devices come from one alternative; the kit asks
		// for files of requests with allocated devices only.
		return append(out, fmt.Sprintf("%s: the claim is allocated %d devices under %d request names for request %s, the kit expects one name",
			label, len(want.devices), len(names), want.request))
	}
	wantName := slices.Collect(maps.Keys(names))[0]
	if len(obj.Requests) != 1 {
		bad("%d requests, want exactly 1 (%s)", len(obj.Requests), wantName)
		return out
	}
	r := obj.Requests[0]
	if r.Name != wantName {
		bad("request %q, want %q as the allocation result names it", r.Name, wantName)
	}
	got := map[string]metadatav1beta1.Device{}
	for _, d := range r.Devices {
		if d.Driver != want.driver {
			bad("device %s/%s of driver %q, want %s", d.Pool, d.Name, d.Driver, want.driver)
		}
		got[d.Pool+"/"+d.Name] = d
	}
	if len(got) != len(r.Devices) {
		bad("lists %d devices, %d of them distinct", len(r.Devices), len(got))
	}
	for _, ad := range want.devices {
		d, ok := got[ad.ID()]
		if !ok {
			bad("device %s is allocated for request %s, the file does not list it", ad.ID(), wantName)
			continue
		}
		delete(got, ad.ID())
		out = append(out, compareAttributes(label+": device "+ad.ID(), d.Attributes, ad.Attributes)...)
	}
	for _, id := range slices.Sorted(maps.Keys(got)) {
		bad("lists device %s, which is not allocated for request %s", id, wantName)
	}
	return out
}

// compareAttributes compares a device's attributes in a metadata file with
// those of its ResourceSlice entry, attribute by attribute.
func compareAttributes(label string, got, want map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: attribute %s is %s in the ResourceSlice, missing in the metadata", label, k, metadataAttributeJSON(want[k])))
		case !apiequality.Semantic.DeepEqual(g, want[k]):
			out = append(out, fmt.Sprintf("%s: attribute %s is %s in the metadata, %s in the ResourceSlice", label, k, metadataAttributeJSON(g), metadataAttributeJSON(want[k])))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: attribute %s is %s in the metadata, the ResourceSlice has no such attribute", label, k, metadataAttributeJSON(got[k])))
		}
	}
	return out
}

// metadataAttributeJSON renders an attribute value for findings, as JSON.
func metadataAttributeJSON(a resourceapi.DeviceAttribute) string {
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Sprintf("%+v", a)
	}
	return string(data)
}

func describeOptional(s *string) string {
	if s == nil {
		return "unset"
	}
	return fmt.Sprintf("%q", *s)
}
