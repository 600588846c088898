package podresources

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cucumber/godog"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/kubeletapi"
)

// podResourcesSteps read the kubelet's PodResources API (KEP-3695): what
// it reports of a pod's claims per container, compared with the claims'
// allocations, what the driver prepared and the node's CDI specs.
func (w *world) podResourcesSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the kit can reach the kubelet's pod resources API$`, Fn: w.podResourcesReachable},
		{Pattern: `^a pod "([^"]+)" is created without claims$`, Fn: w.podWithoutClaims},
		{Pattern: `^the kubelet's pod resources (List|Get) reports for pod "([^"]+)" the devices and CDI devices of its claims$`, Fn: w.podResourcesReportClaims},
		{Pattern: `^the kubelet's pod resources List and Get report no dynamic resources for pod "([^"]+)"$`, Fn: w.podResourcesReportNone},
		{Pattern: `^the kubelet's pod resources List and Get no longer report pod "([^"]+)"$`, Fn: w.podResourcesForget},
	}
}

// podResources connects to the kubelet's podresources socket, or says why
// the kit cannot.
func (w *world) podResources() (*kubeletapi.PodResources, string, error) {
	if w.Cfg.NodeKubeletRootDir == "" {
		return nil, kit.KubeletStateSkipReason, nil
	}
	socket := filepath.Join(w.Cfg.NodeKubeletRootDir, kubeletapi.PodResourcesSocket)
	if _, err := os.Stat(socket); err != nil {
		return nil, "", fmt.Errorf("the kubelet's pod resources socket below --node-kubelet-root-dir: %w", err)
	}
	c, err := kubeletapi.NewPodResources(socket)
	return c, "", err
}

func (w *world) podResourcesReachable(ctx context.Context) (context.Context, error) {
	if w.Cfg.NodeKubeletRootDir != "" {
		socket := filepath.Join(w.Cfg.NodeKubeletRootDir, kubeletapi.PodResourcesSocket)
		if _, err := os.Stat(socket); errors.Is(err, os.ErrNotExist) {
			return kit.Skip(ctx, fmt.Sprintf("the kit cannot see the kubelet's pod resources socket: %s does not exist (is --node-kubelet-root-dir the kubelet's --root-dir?)", socket))
		}
	}
	c, why, err := w.podResources()
	if why != "" {
		return kit.Skip(ctx, why)
	}
	if err != nil {
		return ctx, err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, kit.NodeSocketTimeout)
	defer cancel()
	_, err = c.List(cctx)
	return ctx, err
}

func (w *world) podWithoutClaims(ctx context.Context, name string) error {
	return w.CreatePod(ctx, name, nil)
}

// reportedPod calls List (the pod's entry, nil when absent) or Get.
func (w *world) reportedPod(ctx context.Context, method, name string) (*podresourcesv1.PodResources, error) {
	c, why, err := w.podResources()
	if why != "" {
		return nil, fmt.Errorf("%s", why)
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, kit.NodeSocketTimeout)
	defer cancel()
	if method == "Get" {
		return c.Get(ctx, w.Ns, name)
	}
	list, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	var found *podresourcesv1.PodResources
	for _, p := range list {
		if p.GetNamespace() != w.Ns || p.GetName() != name {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("the kubelet's pod resources List reports pod %s/%s twice", w.Ns, name)
		}
		found = p
	}
	return found, nil
}

// podResourcesReportClaims compares what List or Get reports for the pod's
// probe container (which uses every claim of the pod) with its claims:
// each claim once, by name and namespace; exactly the devices allocated to
// it (driver, pool, device, share); for each device the CDI devices the
// driver prepared for it (as the kubelet recorded NodePrepareResources'
// answer), each defined by a CDI spec on the node.
func (w *world) podResourcesReportClaims(ctx context.Context, method, name string) (context.Context, error) {
	p, err := w.Pod(name)
	if err != nil {
		return ctx, err
	}
	if p.Claims == nil {
		return ctx, fmt.Errorf("pod %s: a step \"pod %s is running\" must come first", name, name)
	}
	if why := w.ContractAccess(); why != "" {
		return kit.Skip(ctx, why)
	}
	got, err := w.reportedPod(ctx, method, name)
	if err != nil {
		return ctx, err
	}
	if got == nil {
		return ctx, fmt.Errorf("the kubelet's pod resources %s does not report the running pod %s/%s", method, w.Ns, name)
	}
	state, err := kit.ReadKubeletDRAState(w.Cfg.NodeKubeletRootDir)
	if err != nil {
		return ctx, err
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(w.Cfg.NodeCDIDir), cdi.WithAutoRefresh(false))
	if err != nil {
		return ctx, fmt.Errorf("read the node's CDI specs in %s: %w", w.Cfg.NodeCDIDir, err)
	}
	defined := map[string]bool{}
	for _, id := range cache.ListDevices() {
		defined[id] = true
	}
	var want []wantClaim
	for _, entry := range slices.Sorted(maps.Keys(p.Claims)) {
		rec := p.Claims[entry]
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, rec.Name, metav1.GetOptions{})
		if err != nil {
			return ctx, fmt.Errorf("get claim %s of pod %s: %w", rec.Name, name, err)
		}
		wc := wantClaim{Name: c.Name, namespace: c.Namespace, devices: allocatedKeys(c), cdi: map[string][]string{}}
		for driver, ds := range state[string(c.UID)].DriverState {
			for _, d := range ds.Devices {
				k := driver + "/" + d.PoolName + "/" + d.DeviceName
				wc.cdi[k] = append(wc.cdi[k], d.CDIDeviceIDs...)
			}
		}
		want = append(want, wc)
	}
	var bad []string
	var report []string
	seen := false
	for _, ctr := range got.GetContainers() {
		report = append(report, describeDynamicResources(ctr))
		if ctr.GetName() != kit.ProbeContainer {
			if len(ctr.GetDynamicResources()) > 0 {
				bad = append(bad, fmt.Sprintf("pod %s: container %s uses no claim, but the kubelet reports dynamic resources for it: %s", name, ctr.GetName(), describeDynamicResources(ctr)))
			}
			continue
		}
		seen = true
		bad = append(bad, checkDynamicResources(name, ctr, want, func(id string) bool { return defined[id] })...)
	}
	if !seen {
		bad = append(bad, fmt.Sprintf("the kubelet's pod resources %s reports no container %s for pod %s", method, kit.ProbeContainer, name))
	}
	ctx = godog.Attach(ctx, godog.Attachment{FileName: "pod-resources-" + strings.ToLower(method) + ".txt", MediaType: "text/plain", Body: []byte(strings.Join(report, "\n"))})
	for i := range bad {
		bad[i] = "pod resources " + method + ": " + bad[i]
	}
	return ctx, kit.Findings(bad)
}

// wantClaim is what the kit expects the kubelet to report for one claim of
// a container.
type wantClaim struct {
	Name, namespace string
	// devices are the claim's allocated devices (deviceKey).
	devices map[string]bool
	// cdi are the CDI device IDs the drivers prepared, by
	// driver/pool/device.
	cdi map[string][]string
}

// deviceKey names an allocated device: driver/pool/device, with "#share"
// for a share of a device that allows multiple allocations.
func deviceKey(driver, pool, device, share string) string {
	k := driver + "/" + pool + "/" + device
	if share != "" {
		k += "#" + share
	}
	return k
}

func allocatedKeys(c *resourceapi.ResourceClaim) map[string]bool {
	out := map[string]bool{}
	if c.Status.Allocation == nil {
		return out
	}
	for _, r := range c.Status.Allocation.Devices.Results {
		share := ""
		if r.ShareID != nil {
			share = string(*r.ShareID)
		}
		out[deviceKey(r.Driver, r.Pool, r.Device, share)] = true
	}
	return out
}

// checkDynamicResources compares a container's reported dynamic resources
// with the claims it uses. The kubelet (pkg/kubelet/cm, GetDynamicResources)
// reports every device of a claim to each container that uses the claim,
// whatever request the container names; and, in 1.37, it collects a
// device's CDI devices in a list that it carries over to the next device of
// the same driver in the claim, so a device may list the CDI devices of the
// claim's devices before it too. The kit accepts that, but no CDI device
// outside the claim's devices of that driver.
func checkDynamicResources(pod string, ctr *podresourcesv1.ContainerResources, want []wantClaim, defined func(string) bool) []string {
	var bad []string
	byName := map[string]*podresourcesv1.DynamicResource{}
	for _, dr := range ctr.GetDynamicResources() {
		key := dr.GetClaimNamespace() + "/" + dr.GetClaimName()
		if _, dup := byName[key]; dup {
			bad = append(bad, fmt.Sprintf("pod %s container %s: claim %s is reported twice", pod, ctr.GetName(), key))
		}
		byName[key] = dr
	}
	wanted := map[string]bool{}
	for _, wc := range want {
		key := wc.namespace + "/" + wc.Name
		wanted[key] = true
		dr, ok := byName[key]
		if !ok {
			bad = append(bad, fmt.Sprintf("pod %s container %s: claim %s is not reported", pod, ctr.GetName(), key))
			continue
		}
		reported := map[string]bool{}
		for _, cr := range dr.GetClaimResources() {
			k := deviceKey(cr.GetDriverName(), cr.GetPoolName(), cr.GetDeviceName(), cr.GetShareId())
			if reported[k] {
				bad = append(bad, fmt.Sprintf("pod %s container %s claim %s: device %s is reported twice", pod, ctr.GetName(), key, k))
			}
			reported[k] = true
			if !wc.devices[k] {
				bad = append(bad, fmt.Sprintf("pod %s container %s claim %s: device %s is reported, but not allocated to the claim (allocated: %s)", pod, ctr.GetName(), key, k, strings.Join(slices.Sorted(maps.Keys(wc.devices)), ", ")))
				continue
			}
			bad = append(bad, checkCDIDevices(pod, ctr.GetName(), key, cr, wc, defined)...)
		}
		for _, k := range slices.Sorted(maps.Keys(wc.devices)) {
			if !reported[k] {
				bad = append(bad, fmt.Sprintf("pod %s container %s claim %s: allocated device %s is not reported", pod, ctr.GetName(), key, k))
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byName)) {
		if !wanted[key] {
			bad = append(bad, fmt.Sprintf("pod %s container %s: claim %s is reported, but the container does not use it", pod, ctr.GetName(), key))
		}
	}
	return bad
}

// checkCDIDevices compares one reported device's CDI devices with what
// the driver prepared (see checkDynamicResources).
func checkCDIDevices(pod, ctr, claim string, cr *podresourcesv1.ClaimResource, wc wantClaim, defined func(string) bool) []string {
	var bad []string
	dev := cr.GetDriverName() + "/" + cr.GetPoolName() + "/" + cr.GetDeviceName()
	ids := map[string]bool{}
	for _, c := range cr.GetCdiDevices() {
		ids[c.GetName()] = true
	}
	for _, id := range wc.cdi[dev] {
		if !ids[id] {
			bad = append(bad, fmt.Sprintf("pod %s container %s claim %s device %s: CDI device %s, which the driver prepared for it, is not reported (reported: %s)", pod, ctr, claim, dev, id, strings.Join(slices.Sorted(maps.Keys(ids)), ", ")))
		}
	}
	sameDriver := map[string]bool{}
	for k, list := range wc.cdi {
		if strings.HasPrefix(k, cr.GetDriverName()+"/") {
			for _, id := range list {
				sameDriver[id] = true
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		switch {
		case !sameDriver[id]:
			bad = append(bad, fmt.Sprintf("pod %s container %s claim %s device %s: CDI device %s is reported, but the driver prepared no such CDI device for the claim", pod, ctr, claim, dev, id))
		case !defined(id):
			bad = append(bad, fmt.Sprintf("pod %s container %s claim %s device %s: CDI device %s is in no CDI spec of the node", pod, ctr, claim, dev, id))
		}
	}
	return bad
}

// describeDynamicResources is a container's dynamic resources on one line.
func describeDynamicResources(ctr *podresourcesv1.ContainerResources) string {
	var claims []string
	for _, dr := range ctr.GetDynamicResources() {
		var devs []string
		for _, cr := range dr.GetClaimResources() {
			var ids []string
			for _, c := range cr.GetCdiDevices() {
				ids = append(ids, c.GetName())
			}
			devs = append(devs, fmt.Sprintf("%s [%s]", deviceKey(cr.GetDriverName(), cr.GetPoolName(), cr.GetDeviceName(), cr.GetShareId()), strings.Join(ids, " ")))
		}
		claims = append(claims, fmt.Sprintf("%s/%s: %s", dr.GetClaimNamespace(), dr.GetClaimName(), strings.Join(devs, ", ")))
	}
	if len(claims) == 0 {
		return fmt.Sprintf("container %s: no dynamic resources", ctr.GetName())
	}
	return fmt.Sprintf("container %s: %s", ctr.GetName(), strings.Join(claims, "; "))
}

// podResourcesReportNone checks that List and Get report the pod with no
// dynamic resources in any container.
func (w *world) podResourcesReportNone(ctx context.Context, name string) error {
	var bad []string
	for _, method := range []string{"List", "Get"} {
		got, err := w.reportedPod(ctx, method, name)
		if err != nil {
			return err
		}
		if got == nil {
			bad = append(bad, fmt.Sprintf("the kubelet's pod resources %s does not report the running pod %s/%s", method, w.Ns, name))
			continue
		}
		if len(got.GetContainers()) == 0 {
			bad = append(bad, fmt.Sprintf("the kubelet's pod resources %s reports pod %s with no container", method, name))
		}
		for _, ctr := range got.GetContainers() {
			if len(ctr.GetDynamicResources()) > 0 {
				bad = append(bad, fmt.Sprintf("the kubelet's pod resources %s reports dynamic resources for pod %s, which has no claim: %s", method, name, describeDynamicResources(ctr)))
			}
		}
	}
	return kit.Findings(bad)
}

// podResourcesForget waits until List no longer reports the deleted pod
// and Get fails for it.
func (w *world) podResourcesForget(ctx context.Context, name string) error {
	return kit.Poll(ctx, w.Cfg.Timeouts.PodDelete, fmt.Sprintf("the kubelet's pod resources to forget pod %s/%s", w.Ns, name), func(ctx context.Context) (bool, string, error) {
		listed, err := w.reportedPod(ctx, "List", name)
		if err != nil {
			return false, err.Error(), nil
		}
		got, getErr := w.reportedPod(ctx, "Get", name)
		var still []string
		if listed != nil {
			still = append(still, "List reports it: "+describeContainers(listed))
		}
		if getErr == nil {
			still = append(still, "Get reports it: "+describeContainers(got))
		}
		return len(still) == 0, strings.Join(still, "; "), nil
	})
}

func describeContainers(p *podresourcesv1.PodResources) string {
	var out []string
	for _, c := range p.GetContainers() {
		out = append(out, describeDynamicResources(c))
	}
	return strings.Join(out, "; ")
}
