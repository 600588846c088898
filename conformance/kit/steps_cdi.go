package kit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"drakit.dev/drakit/conformance/observe"
)

// cdiSteps look at the node's CDI spec directory, which the kubelet plugin
// fills in NodePrepareResources and must clean in NodeUnprepareResources.
func (w *World) cdiSteps() []StepDef {
	return []StepDef{
		{Pattern: `^the kit can read the node's CDI directory$`, Fn: w.cdiDirReadable},
		{Pattern: `^the node's CDI directory has a spec for the claim "([^"]+)" of pod "([^"]+)"$`, Fn: w.cdiHasClaimSpec},
		{Pattern: `^the node's CDI directory has no spec for the claim "([^"]+)" of pod "([^"]+)"$`, Fn: w.cdiHasNoClaimSpec},
	}
}

// cdiSkipReason explains why CDI checks do not apply.
const cdiSkipReason = "the kit cannot see the node's file system: no node CDI directory configured (set --node-cdi-dir to the directory in containerd's cdi_spec_dirs)"

func (w *World) cdiDirReadable(ctx context.Context) (context.Context, error) {
	if w.Cfg.NodeCDIDir == "" {
		return Skip(ctx, cdiSkipReason)
	}
	if _, err := os.ReadDir(w.Cfg.NodeCDIDir); err != nil {
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

func (w *World) CdiDir() (string, error) {
	if w.Cfg.NodeCDIDir == "" {
		// The scenario lacks the capability step; never pass silently.
		return "", fmt.Errorf("%s (the scenario must start with \"the kit can read the node's CDI directory\")", cdiSkipReason)
	}
	return w.Cfg.NodeCDIDir, nil
}

// claimCDISpecs returns the node's CDI directory and the spec files in it
// that belong to the claim (of the pod, when pod is set); none is an error
// that lists the specs there.
func (w *World) claimCDISpecs(ctx context.Context, claim, pod string) (dir, label string, matching []string, err error) {
	if dir, err = w.CdiDir(); err != nil {
		return "", "", nil, err
	}
	ref, label, err := w.ClaimRef(ctx, claim, pod)
	if err != nil {
		return "", "", nil, err
	}
	matching, all, err := cdiSpecsMentioning(dir, string(ref.UID))
	if err != nil {
		return "", "", nil, err
	}
	if len(matching) == 0 {
		return "", "", nil, fmt.Errorf("%s: no CDI spec in %s mentions the claim's uid %s; specs there: [%s]", label, dir, ref.UID, strings.Join(all, ", "))
	}
	return dir, label, matching, nil
}

func (w *World) cdiHasClaimSpec(ctx context.Context, claim, pod string) error {
	_, _, _, err := w.claimCDISpecs(ctx, claim, pod)
	return err
}

func (w *World) cdiHasNoClaimSpec(ctx context.Context, claim, pod string) error {
	dir, err := w.CdiDir()
	if err != nil {
		return err
	}
	ref, label, err := w.ClaimRef(ctx, claim, pod)
	if err != nil {
		return err
	}
	return Poll(ctx, w.Cfg.Timeouts.Cleanup, fmt.Sprintf("the CDI specs of %s (uid %s) to be removed from %s", label, ref.UID, dir), func(ctx context.Context) (bool, string, error) {
		matching, _, err := cdiSpecsMentioning(dir, string(ref.UID))
		if err != nil {
			return false, err.Error(), nil
		}
		return len(matching) == 0, "still there: " + strings.Join(matching, ", "), nil
	})
}

// kubeletStateSkipReason explains why the prepared CDI edits cannot be read.
const KubeletStateSkipReason = "the kit cannot see what the kubelet prepared: no node kubelet root dir configured (set --node-kubelet-root-dir to the kubelet's --root-dir)"

// contractAccess is why the kit cannot check the DRA contract on the node,
// "" when it can.
func (w *World) ContractAccess() string {
	switch {
	case w.Cfg.NodeKubeletRootDir == "":
		return KubeletStateSkipReason
	case w.Cfg.NodeCDIDir == "":
		return cdiSkipReason
	}
	return ""
}

// contractResult is what the DRA contract check found for a pod.
type contractResult struct {
	findings []string
	// prepared are the devices the driver prepared for the pod's claims
	// (pool/device), sorted; cdiIDs their CDI device IDs.
	prepared, cdiIDs []string
	// edits are the CDI edits of cdiIDs and of the CDI devices other
	// drivers prepared for the pod's claims; others counts the node's other
	// CDI devices the container must not show.
	edits  observe.ContainerEdits
	others int
	// peerEnv are the variables the CDI devices of other drivers in the
	// pod's claims set: the pod's, but not the driver's to account for.
	peerEnv []string
	// shown are the driver's devices of the pod's claims (pool/device, by
	// the kubelet's record) whose CDI devices' every edit the container
	// shows, sorted: the container's own account of its devices. The
	// node's other CDI devices do not count: a device prepared for another
	// claim may make only edits this container shares (common device
	// nodes), which says nothing about the container.
	shown []string
}

// contract checks the DRA contract on the node for a running pod: for every
// claim of the pod, the driver prepared exactly the devices allocated to it
// (as the kubelet recorded NodePrepareResources' answer), and the pod's
// container shows exactly the CDI edits of those devices — every
// environment entry, device node and mount — and none of another CDI
// device of the node that those do not also make. An error means the kit
// could not read the node's state.
func (w *World) contract(p *PodRecord) (contractResult, error) {
	var res contractResult
	state, err := ReadKubeletDRAState(w.Cfg.NodeKubeletRootDir)
	if err != nil {
		return res, err
	}
	mine, peers, prepared := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, entry := range slices.Sorted(maps.Keys(p.Claims)) {
		c := p.Claims[entry]
		claimState, ok := state[string(c.UID)]
		if !ok {
			res.findings = append(res.findings, fmt.Sprintf("claim %s (uid %s) of pod %s: the kubelet records no preparation of it", c.Name, c.UID, p.Name))
			continue
		}
		devices := claimState.DriverState[w.Driver.DriverName].Devices
		res.findings = append(res.findings, observe.CheckPreparedDevices(c.Name, p.Devices, devices)...)
		for _, d := range devices {
			prepared[d.PoolName+"/"+d.DeviceName] = true
			for _, id := range d.CDIDeviceIDs {
				mine[id] = true
			}
		}
		// Devices of other drivers in the pod's claims (a GPU beside a
		// NIC) are the pod's too: their edits are expected, not foreign.
		for driver, ds := range claimState.DriverState {
			if driver == w.Driver.DriverName {
				continue
			}
			for _, d := range ds.Devices {
				for _, id := range d.CDIDeviceIDs {
					peers[id] = true
				}
			}
		}
	}
	res.prepared, res.cdiIDs = devicesOf(prepared), devicesOf(mine)
	pods := maps.Clone(mine)
	maps.Copy(pods, peers)
	cache, err := cdi.NewCache(cdi.WithSpecDirs(w.Cfg.NodeCDIDir), cdi.WithAutoRefresh(false))
	if err != nil {
		return res, fmt.Errorf("read the node's CDI specs in %s: %w", w.Cfg.NodeCDIDir, err)
	}
	w.Cfg.hostDeviceNodes(cache)
	if res.edits, err = observe.CDIEditsOf(cache, devicesOf(pods)...); err != nil {
		res.findings = append(res.findings, fmt.Sprintf("pod %s: %v", p.Name, err))
		return res, nil
	}
	if len(peers) > 0 {
		peerEdits, err := observe.CDIEditsOf(cache, devicesOf(peers)...)
		if err != nil {
			res.findings = append(res.findings, fmt.Sprintf("pod %s: %v", p.Name, err))
			return res, nil
		}
		res.peerEnv = peerEdits.EnvNames()
	}
	others := map[string]observe.ContainerEdits{}
	for _, id := range cache.ListDevices() {
		if pods[id] {
			continue
		}
		// A device whose edits cannot be applied here (a spec left by a
		// claim whose device nodes are gone) injects nothing the kit can
		// find in the container.
		if e, err := observe.CDIEditsOf(cache, id); err == nil {
			others[id] = e
		}
	}
	res.others = len(others)
	seen := observe.ObservedOf(*p.Report)
	res.findings = append(res.findings, observe.CheckCDIEdits(p.Name, res.edits, others, seen)...)
	deviceOf := map[string]string{}
	for _, claimState := range state {
		for _, d := range claimState.DriverState[w.Driver.DriverName].Devices {
			for _, id := range d.CDIDeviceIDs {
				deviceOf[id] = d.PoolName + "/" + d.DeviceName
			}
		}
	}
	shown := map[string]bool{}
	show := func(id string) {
		if d, ok := deviceOf[id]; ok {
			shown[d] = true
		} else {
			shown[id] = true
		}
	}
	for _, id := range res.cdiIDs {
		if e, err := observe.CDIEditsOf(cache, id); err == nil && e.ShownIn(seen) {
			show(id)
		}
	}
	res.shown = devicesOf(shown)
	return res, nil
}

// cdiSpec is what the kit reads of a CDI spec: its kind and device names.
type CdiSpec struct {
	Kind    string `json:"kind"`
	Devices []struct {
		Name string `json:"name"`
	} `json:"devices"`
}

// cdiDefinitions reads every CDI spec file (.json, .yaml, .yml) in dir and
// returns the files that define each CDI device, by its fully qualified ID
// (kind=name). The files are read as they are, not through a CDI cache,
// which drops devices two specs define.
func CdiDefinitions(dir string) (map[string][]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read the node's CDI directory: %w", err)
	}
	defined := map[string][]string{}
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.Type().IsRegular() || (ext != ".json" && ext != ".yaml" && ext != ".yml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read CDI spec %s: %w", e.Name(), err)
		}
		var spec CdiSpec
		if err := yaml.Unmarshal(data, &spec); err != nil {
			return nil, fmt.Errorf("parse CDI spec %s: %w", filepath.Join(dir, e.Name()), err)
		}
		for _, d := range spec.Devices {
			id := spec.Kind + "=" + d.Name
			defined[id] = append(defined[id], e.Name())
		}
	}
	return defined, nil
}
