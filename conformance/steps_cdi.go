package conformance

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
)

// cdiSteps look at the node's CDI spec directory, which the kubelet plugin
// fills in NodePrepareResources and must clean in NodeUnprepareResources.
func (w *world) cdiSteps() []stepDef {
	return []stepDef{
		{`^the kit can read the node's CDI directory$`, w.cdiDirReadable},
		{`^the kit can read what the kubelet prepared$`, w.kubeletStateReadable},
		{`^pod "([^"]+)" gets exactly the CDI edits the driver prepared for its claims$`, w.podGetsPreparedCDIEdits},
		{`^the node's CDI directory has a spec for the claim "([^"]+)" of pod "([^"]+)"$`, w.cdiHasClaimSpec},
		{`^the node's CDI directory has no spec for the claim "([^"]+)" of pod "([^"]+)"$`, w.cdiHasNoClaimSpec},
		{`^pod "([^"]+)" has exactly the NVIDIA device nodes of the CDI spec of the claim "([^"]+)"$`, w.podHasCDISpecNodes},
	}
}

// cdiSkipReason explains why CDI checks do not apply.
const cdiSkipReason = "the kit cannot see the node's file system: no node CDI directory configured (set --node-cdi-dir to the directory in containerd's cdi_spec_dirs)"

func (w *world) cdiDirReadable(ctx context.Context) (context.Context, error) {
	if w.cfg.NodeCDIDir == "" {
		return skip(ctx, cdiSkipReason)
	}
	if _, err := os.ReadDir(w.cfg.NodeCDIDir); err != nil {
		return ctx, fmt.Errorf("read the node's CDI directory: %w", err)
	}
	return ctx, nil
}

// cdiSpecsMentioning returns the CDI spec files (.json, .yaml, .yml) in dir
// whose name or content contains the claim UID, and all spec file names.
// Drivers name per-claim specs and devices after the claim UID, as the
// reference driver and dra-example-driver do.
func cdiSpecsMentioning(dir, uid string) (matching, all []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read the node's CDI directory: %w", err)
	}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.Type().IsRegular() || (ext != ".json" && ext != ".yaml" && ext != ".yml") {
			continue
		}
		all = append(all, e.Name())
		if strings.Contains(e.Name(), uid) {
			matching = append(matching, e.Name())
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if os.IsNotExist(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read CDI spec %s: %w", e.Name(), err)
		}
		if strings.Contains(string(data), uid) {
			matching = append(matching, e.Name())
		}
	}
	sort.Strings(matching)
	sort.Strings(all)
	return matching, all, nil
}

func (w *world) cdiDir() (string, error) {
	if w.cfg.NodeCDIDir == "" {
		// The scenario lacks the capability step; never pass silently.
		return "", fmt.Errorf("%s (the scenario must start with \"the kit can read the node's CDI directory\")", cdiSkipReason)
	}
	return w.cfg.NodeCDIDir, nil
}

// claimCDISpecs returns the node's CDI directory and the spec files in it
// that belong to the claim (of the pod, when pod is set); none is an error
// that lists the specs there.
func (w *world) claimCDISpecs(ctx context.Context, claim, pod string) (dir, label string, matching []string, err error) {
	if dir, err = w.cdiDir(); err != nil {
		return "", "", nil, err
	}
	ref, label, err := w.claimRef(ctx, claim, pod)
	if err != nil {
		return "", "", nil, err
	}
	matching, all, err := cdiSpecsMentioning(dir, string(ref.uid))
	if err != nil {
		return "", "", nil, err
	}
	if len(matching) == 0 {
		return "", "", nil, fmt.Errorf("%s: no CDI spec in %s mentions the claim's uid %s; specs there: [%s]", label, dir, ref.uid, strings.Join(all, ", "))
	}
	return dir, label, matching, nil
}

func (w *world) cdiHasClaimSpec(ctx context.Context, claim, pod string) error {
	_, _, _, err := w.claimCDISpecs(ctx, claim, pod)
	return err
}

func (w *world) cdiHasNoClaimSpec(ctx context.Context, claim, pod string) error {
	dir, err := w.cdiDir()
	if err != nil {
		return err
	}
	ref, label, err := w.claimRef(ctx, claim, pod)
	if err != nil {
		return err
	}
	return poll(ctx, w.cfg.Timeouts.Cleanup, fmt.Sprintf("the CDI specs of %s (uid %s) to be removed from %s", label, ref.uid, dir), func(ctx context.Context) (bool, string, error) {
		matching, _, err := cdiSpecsMentioning(dir, string(ref.uid))
		if err != nil {
			return false, err.Error(), nil
		}
		return len(matching) == 0, "still there: " + strings.Join(matching, ", "), nil
	})
}

// nvidiaNodePrefix starts the paths of NVIDIA device nodes in a container:
// /dev/nvidia<minor>, /dev/nvidiactl, /dev/nvidia-caps/…, /dev/nvidia-uvm.
const nvidiaNodePrefix = probe.DevPath + "/nvidia"

// cdiDeviceNodes returns the container paths of the device nodes a CDI spec
// injects, from the spec's own and every device's container edits.
func cdiDeviceNodes(data []byte) ([]string, error) {
	var spec cdispec.Spec
	if err := yaml.Unmarshal(data, &spec); err != nil {
		return nil, err
	}
	var out []string
	add := func(e cdispec.ContainerEdits) {
		for _, n := range e.DeviceNodes {
			if n != nil {
				out = append(out, n.Path)
			}
		}
	}
	add(spec.ContainerEdits)
	for _, d := range spec.Devices {
		add(d.ContainerEdits)
	}
	return out, nil
}

// podHasCDISpecNodes compares the NVIDIA device nodes in the pod's container
// with those the claim's CDI specs inject: the pod must have all of them and
// no other. The pod must have no other claim of the driver.
func (w *world) podHasCDISpecNodes(ctx context.Context, pod, claim string) (context.Context, error) {
	if !w.cfg.observes(declaration.ObserverNVML) {
		return skip(ctx, nvmlSkipReason)
	}
	p, err := w.podWithDevices(pod)
	if err != nil {
		return ctx, err
	}
	if len(p.claims) != 1 {
		return ctx, fmt.Errorf("pod %s has %d claims; the comparison needs a pod with only the claim %s", pod, len(p.claims), claim)
	}
	dir, label, matching, err := w.claimCDISpecs(ctx, claim, pod)
	if err != nil {
		return ctx, err
	}
	want := sets.New[string]()
	for _, name := range matching {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return ctx, fmt.Errorf("read CDI spec %s: %w", name, err)
		}
		nodes, err := cdiDeviceNodes(data)
		if err != nil {
			return ctx, fmt.Errorf("parse CDI spec %s: %w", name, err)
		}
		for _, n := range nodes {
			if strings.HasPrefix(n, nvidiaNodePrefix) {
				want.Insert(n)
			}
		}
	}
	if want.Len() == 0 {
		return ctx, fmt.Errorf("%s: its CDI specs (%s) inject no NVIDIA device node", label, strings.Join(matching, ", "))
	}
	got := sets.New[string]()
	for _, d := range p.report.Devices {
		if strings.HasPrefix(d.Path, nvidiaNodePrefix) {
			got.Insert(d.Path)
		}
	}
	var bad []string
	for _, n := range sets.List(want.Difference(got)) {
		bad = append(bad, fmt.Sprintf("pod %s: the CDI spec of %s injects %s, which the container does not have", pod, label, n))
	}
	for _, n := range sets.List(got.Difference(want)) {
		bad = append(bad, fmt.Sprintf("pod %s: the container has %s, which no CDI spec of %s injects", pod, n, label))
	}
	return ctx, findings(bad)
}

// kubeletStateSkipReason explains why the prepared CDI edits cannot be read.
const kubeletStateSkipReason = "the kit cannot see what the kubelet prepared: no node kubelet root dir configured (set --node-kubelet-root-dir to the kubelet's --root-dir)"

func (w *world) kubeletStateReadable(ctx context.Context) (context.Context, error) {
	if w.cfg.NodeKubeletRootDir == "" {
		return skip(ctx, kubeletStateSkipReason)
	}
	if w.cfg.NodeCDIDir == "" {
		return skip(ctx, cdiSkipReason)
	}
	if _, err := readKubeletDRAState(w.cfg.NodeKubeletRootDir); err != nil {
		return ctx, err
	}
	return ctx, nil
}

// podGetsPreparedCDIEdits checks the DRA contract on the node: for every
// claim of the pod, the driver prepared exactly the devices allocated to it
// (as the kubelet recorded NodePrepareResources' answer), and the pod's
// container shows exactly the CDI edits of those devices — every
// environment entry, device node and mount — and none of another CDI
// device of the node that those do not also make.
func (w *world) podGetsPreparedCDIEdits(pod string) error {
	p, err := w.podWithDevices(pod)
	if err != nil {
		return err
	}
	if w.cfg.NodeKubeletRootDir == "" {
		return fmt.Errorf("%s (the scenario must start with \"the kit can read what the kubelet prepared\")", kubeletStateSkipReason)
	}
	dir, err := w.cdiDir()
	if err != nil {
		return err
	}
	state, err := readKubeletDRAState(w.cfg.NodeKubeletRootDir)
	if err != nil {
		return err
	}
	var bad []string
	mine := map[string]bool{}
	for _, entry := range slices.Sorted(maps.Keys(p.claims)) {
		c := p.claims[entry]
		prepared, ok := state[string(c.uid)]
		if !ok {
			bad = append(bad, fmt.Sprintf("claim %s (uid %s) of pod %s: the kubelet records no preparation of it", c.name, c.uid, pod))
			continue
		}
		devices := prepared.DriverState[w.cfg.DriverName].Devices
		bad = append(bad, observe.CheckPreparedDevices(c.name, p.devices, devices)...)
		for _, d := range devices {
			for _, id := range d.CDIDeviceIDs {
				mine[id] = true
			}
		}
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		return fmt.Errorf("read the node's CDI specs in %s: %w", dir, err)
	}
	want, err := observe.CDIEditsOf(cache, slices.Sorted(maps.Keys(mine))...)
	if err != nil {
		return fmt.Errorf("pod %s: %w", pod, err)
	}
	others := map[string]observe.ContainerEdits{}
	for _, id := range cache.ListDevices() {
		if mine[id] {
			continue
		}
		// A device whose edits cannot be applied here (a spec left by a
		// claim whose device nodes are gone) injects nothing the kit can
		// find in the container.
		if e, err := observe.CDIEditsOf(cache, id); err == nil {
			others[id] = e
		}
	}
	bad = append(bad, observe.CheckCDIEdits(pod, want, others, observe.ObservedOf(*p.report))...)
	return findings(bad)
}
