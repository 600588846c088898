package metadata

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metadatav1beta1 "k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/probe"
)

// metadataSteps are KEP-5304's (dra-1.37-spec.md §10): the device metadata
// files a driver's kubelet plugin writes for each request of a prepared
// claim and has the container runtime bind-mount, read-only, into the
// containers that use the claim. The probe reports the files it finds
// below /var/run/kubernetes.io/dra-device-attributes; the kit compares
// them with what the API server stored: the claim, its allocation and the
// allocated devices' ResourceSlice attributes.
func (w *world) metadataSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^a pod "([^"]+)" is created with the claim "([^"]+)" and a second container "([^"]+)" that uses no claim$`, Fn: w.podWithBystander},
		{Pattern: `^pod "([^"]+)" reads the device metadata of request "([^"]+)" of its claim "([^"]+)"$`, Fn: w.podReadsMetadata},
		{Pattern: `^the device metadata of request "([^"]+)" of the claim "([^"]+)" in pod "([^"]+)" names the request "([^"]+)"$`, Fn: w.metadataNamesRequest},
		{Pattern: `^container "([^"]+)" of pod "([^"]+)" has no device metadata file$`, Fn: w.containerHasNoMetadata},
	}
}

// podWithBystander creates a probe pod whose probe container uses the
// claim and whose second container, another probe, uses none.
func (w *world) podWithBystander(ctx context.Context, name, claim, container string) error {
	if container == kit.ProbeContainer {
		return fmt.Errorf("pod %s: the second container must not be named %s, the probe container's name", name, kit.ProbeContainer)
	}
	pod := kit.ProbePod(w.Suite, name, []kit.PodClaim{{Name: claim, Claim: claim}})
	bystander := *pod.Spec.Containers[0].DeepCopy()
	bystander.Name = container
	bystander.Resources.Claims = nil
	pod.Spec.Containers = append(pod.Spec.Containers, bystander)
	return w.CreateProbePod(ctx, pod)
}

// metadataFile finds the metadata file of the driver for request of the
// pod's claim entry in its probe's report and decodes it: the path is
// below resourceclaims/<claim> for a claim the pod names and below
// resourceclaimtemplates/<entry> for one made from a template. The
// returned want is what the API server says the file must describe.
func (w *world) metadataFile(ctx context.Context, podName, request, entry string) (string, []metadatav1beta1.DeviceMetadata, metadataWant, error) {
	var want metadataWant
	p, err := w.RunningPod(podName)
	if err != nil {
		return "", nil, want, err
	}
	c, ok := p.Claims[entry]
	if !ok {
		return "", nil, want, fmt.Errorf("pod %s has no claim entry %q (it has %s)", podName, entry, strings.Join(slices.Sorted(maps.Keys(p.Claims)), ", "))
	}
	pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		return "", nil, want, fmt.Errorf("get pod %s: %w", podName, err)
	}
	fromTemplate, err := entryFromTemplate(pod, entry)
	if err != nil {
		return "", nil, want, err
	}
	want = metadataWant{driver: w.Driver.DriverName, namespace: w.Ns, Claim: c, request: request}
	if fromTemplate {
		want.entry = entry
	}
	for _, d := range p.Devices {
		if d.Claim == c.Name && resourceclaim.BaseRequestRef(d.Request) == request {
			want.devices = append(want.devices, d)
		}
	}
	if len(want.devices) == 0 {
		return "", nil, want, fmt.Errorf("pod %s: claim %s is allocated no device of driver %s for request %s: no metadata file to expect", podName, c.Name, w.Driver.DriverName, request)
	}
	file := metadataFilePath(w.Driver.DriverName, entry, c.Name, fromTemplate, request)
	data, ok := p.Report.Metadata[file]
	if !ok {
		return file, nil, want, fmt.Errorf("pod %s: the container using claim %s has no device metadata file %s (it has %s)", podName, c.Name, file, describeMetadataFiles(p.Report.Metadata))
	}
	objs, err := parseMetadataStream([]byte(data))
	if err != nil {
		return file, nil, want, fmt.Errorf("pod %s: device metadata file %s: %w", podName, file, err)
	}
	return file, objs, want, nil
}

// podReadsMetadata checks the metadata file of request of the pod's claim
// entry: mounted read-only at its path, a stream of every version newest
// first describing the same, and its newest object naming the claim and
// exactly the devices allocated for the request with their ResourceSlice
// attributes.
func (w *world) podReadsMetadata(ctx context.Context, podName, request, entry string) error {
	file, objs, want, err := w.metadataFile(ctx, podName, request, entry)
	if err != nil {
		return err
	}
	p, _ := w.RunningPod(podName)
	label := fmt.Sprintf("pod %s: device metadata file %s", podName, file)
	var bad []string
	mount, ok := findMount(p.Report.Mounts, file)
	switch {
	case !ok:
		bad = append(bad, label+": not a mount point in the container (the file must be bind-mounted)")
	case !mount.ReadOnly:
		bad = append(bad, label+": mounted read-write, want read-only")
	}
	bad = append(bad, checkMetadata(label, objs[0], want)...)
	return kit.Findings(bad)
}

// metadataNamesRequest checks the request name inside the metadata file of
// a request: for a prioritized list it keeps the subrequest
// (request/subrequest), which the file's path drops.
func (w *world) metadataNamesRequest(ctx context.Context, request, entry, podName, name string) error {
	file, objs, _, err := w.metadataFile(ctx, podName, request, entry)
	if err != nil {
		return err
	}
	var got []string
	for _, r := range objs[0].Requests {
		got = append(got, r.Name)
	}
	if !slices.Equal(got, []string{name}) {
		return fmt.Errorf("pod %s: device metadata file %s names the requests %q, want exactly %q", podName, file, got, name)
	}
	return nil
}

// containerHasNoMetadata checks that a container of the pod that uses no
// claim sees no metadata file and no mount below the metadata directory.
func (w *world) containerHasNoMetadata(ctx context.Context, container, podName string) error {
	if _, err := w.RunningPod(podName); err != nil {
		return err
	}
	report, err := w.ReadContainerReport(ctx, podName, container)
	if err != nil {
		return err
	}
	var bad []string
	if len(report.Metadata) > 0 {
		bad = append(bad, fmt.Sprintf("container %s of pod %s uses no claim, yet sees device metadata files %s", container, podName, describeMetadataFiles(report.Metadata)))
	}
	for _, m := range report.Mounts {
		if strings.HasPrefix(m.Path, probe.MetadataPath+"/") {
			bad = append(bad, fmt.Sprintf("container %s of pod %s uses no claim, yet has a mount at %s", container, podName, m.Path))
		}
	}
	return kit.Findings(bad)
}

// entryFromTemplate says whether the pod's claim entry is made from a
// ResourceClaimTemplate (rather than naming a claim).
func entryFromTemplate(pod *corev1.Pod, entry string) (bool, error) {
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.Name == entry {
			return pc.ResourceClaimTemplateName != nil, nil
		}
	}
	return false, fmt.Errorf("pod %s has no claim entry %q in spec.resourceClaims", pod.Name, entry)
}

// findMount finds the mount point at path.
func findMount(mounts []probe.Mount, path string) (probe.Mount, bool) {
	for _, m := range mounts {
		if m.Path == path {
			return m, true
		}
	}
	return probe.Mount{}, false
}

func describeMetadataFiles(files map[string]string) string {
	if len(files) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(files)), ", ")
}
