package fabric

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/internal/nvidiahw"
)

// fabricSteps claim GPUs of one multi-node NVLink clique and the IMEX
// channels of a clique (the declaration's fabric section) and check them
// against ground truth: the cliques NVML reports inside the container (the
// probe's report, the emulated GPUs' fabric state), never the driver's
// attributes, and the IMEX channel device nodes the container has. The
// steps name no node: the multi-node ones hold on any number of nodes.
func (w *world) fabricSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the driver declares an NVLink fabric$`, Fn: w.declaresFabric, Needs: kit.NeedsExclusive},
		{Pattern: `^the driver declares IMEX channels$`, Fn: w.declaresIMEXChannels, Needs: kit.NeedsExclusive},
		{Pattern: `^the cluster has (\d+) nodes in one NVLink clique$`, Fn: w.nodesInOneClique},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting (\d+) devices of one NVLink clique$`, Fn: w.claimOfOneClique},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting an IMEX channel$`, Fn: w.claimIMEXChannel},
		{Pattern: `^the GPUs pod "([^"]+)" sees are (\d+) GPUs of one NVLink clique$`, Fn: w.podSeesOneClique},
		{Pattern: `^pod "([^"]+)" sees exactly one IMEX channel$`, Fn: w.podSeesOneChannel},
		{Pattern: `^pods "([^"]+)" and "([^"]+)" see GPUs of the same NVLink clique$`, Fn: w.podsShareClique},
		{Pattern: `^pods "([^"]+)" and "([^"]+)" see the same IMEX channel$`, Fn: w.podsShareChannel},
	}
}

const (
	noFabricReason   = "the driver declares no NVLink fabric (fabric.cliqueAttribute, --clique-attribute)"
	noChannelsReason = "the driver declares no IMEX channel class (fabric.channelClass, --imex-channel-class)"
)

// cliqueNodes groups the nodes of the driver's published devices by the
// declared clique attribute.
func (w *world) cliqueNodes(ctx context.Context) (map[string][]string, error) {
	devices, err := w.CurrentDevices(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, d := range devices {
		a, ok := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, w.Driver.CliqueAttribute)
		if !ok || a.StringValue == nil || d.Node == kit.AllNodes || slices.Contains(out[*a.StringValue], d.Node) {
			continue
		}
		out[*a.StringValue] = append(out[*a.StringValue], d.Node)
	}
	return out, nil
}

func (w *world) declaresFabric(ctx context.Context) (context.Context, error) {
	if w.Driver.CliqueAttribute == "" {
		return kit.Skip(ctx, noFabricReason)
	}
	cliques, err := w.cliqueNodes(ctx)
	if err != nil {
		return ctx, err
	}
	if len(cliques) == 0 {
		return kit.Skip(ctx, fmt.Sprintf("no device of driver %s has the clique attribute %s: the nodes' GPUs are in no multi-node NVLink domain",
			w.Driver.DriverName, w.Driver.CliqueAttribute))
	}
	return ctx, nil
}

// declaresIMEXChannels waits for the channel class to select devices: the
// driver's controller publishes them once the nodes' slices are there.
func (w *world) declaresIMEXChannels(ctx context.Context) (context.Context, error) {
	ctx, err := w.declaresFabric(ctx)
	if err != nil {
		return ctx, err
	}
	if w.Driver.IMEXChannelClassName == "" {
		return kit.Skip(ctx, noChannelsReason)
	}
	return ctx, kit.Poll(ctx, w.Cfg.Timeouts.Publish, fmt.Sprintf("DeviceClass %s to select IMEX channels", w.Driver.IMEXChannelClassName),
		func(ctx context.Context) (bool, string, error) {
			devices, err := w.ClassDevices(ctx, w.Driver.IMEXChannelClassName)
			if err != nil {
				return false, err.Error(), nil
			}
			return len(devices) > 0, fmt.Sprintf("%d devices", len(devices)), nil
		})
}

func (w *world) nodesInOneClique(ctx context.Context, n int) (context.Context, error) {
	cliques, err := w.cliqueNodes(ctx)
	if err != nil {
		return ctx, err
	}
	var sizes []string
	for c, nodes := range cliques {
		if len(nodes) >= n {
			return ctx, nil
		}
		sizes = append(sizes, fmt.Sprintf("%s: %s", c, strings.Join(nodes, ", ")))
	}
	slices.Sort(sizes)
	return kit.Skip(ctx, fmt.Sprintf("no NVLink clique has %d nodes (%s)", n, strings.Join(sizes, "; ")))
}

func (w *world) claimOfOneClique(ctx context.Context, name string, n int) error {
	domain, id := observe.SplitAttribute(w.Driver.DriverName, w.Driver.CliqueAttribute)
	return w.CreateClaim(ctx, kit.NewClaim(name, kit.WithMatchAttribute(kit.ClaimSpec(w.Driver.DeviceClass(), int64(n)), domain+"/"+id)))
}

func (w *world) claimIMEXChannel(ctx context.Context, name string) error {
	return w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(w.Driver.IMEXChannelClassName, 1)))
}

// seenClique is the one clique NVML reports for every GPU the pod sees;
// problems says what is wrong otherwise.
func (w *world) seenClique(name string) (clique string, gpus int, problems []string, err error) {
	p, err := w.RunningPod(name)
	if err != nil {
		return "", 0, nil, err
	}
	if why := observe.NVMLUnavailable(name, *p.Report); why != "" {
		return "", 0, nil, errors.New(why) // no finding about the driver's devices
	}
	seen := map[string][]string{}
	for _, g := range p.Report.NVML.GPUs {
		seen[g.Clique] = append(seen[g.Clique], g.UUID)
	}
	switch {
	case p.Report.NVML.Error != "":
		problems = append(problems, fmt.Sprintf("pod %s: NVML in the container failed: %s", name, p.Report.NVML.Error))
	case len(seen) > 1:
		problems = append(problems, fmt.Sprintf("pod %s sees GPUs of %d NVLink cliques: %v", name, len(seen), seen))
	case len(seen[""]) > 0:
		problems = append(problems, fmt.Sprintf("pod %s sees GPUs that NVML reports in no NVLink clique: %v", name, seen[""]))
	}
	for c := range seen {
		clique = c
	}
	return clique, len(p.Report.NVML.GPUs), problems, nil
}

func (w *world) podSeesOneClique(_ context.Context, name string, n int) error {
	_, gpus, problems, err := w.seenClique(name)
	if err != nil {
		return err
	}
	if gpus != n {
		problems = append(problems, fmt.Sprintf("pod %s sees %d GPUs through NVML, its claim asked for %d", name, gpus, n))
	}
	return kit.Findings(problems)
}

// seenChannel is the one IMEX channel device node the pod has.
func (w *world) seenChannel(name string) (string, error) {
	p, err := w.RunningPod(name)
	if err != nil {
		return "", err
	}
	var channels []string
	for _, d := range p.Report.Devices {
		if strings.HasPrefix(d.Path, nvidiahw.IMEXChannelDir+"/") {
			channels = append(channels, fmt.Sprintf("%s (%d:%d)", d.Path, d.Major, d.Minor))
		}
	}
	if len(channels) != 1 {
		return "", fmt.Errorf("pod %s has %d IMEX channel device nodes under %s, want exactly the allocated one: %v",
			name, len(channels), nvidiahw.IMEXChannelDir, channels)
	}
	return channels[0], nil
}

func (w *world) podSeesOneChannel(_ context.Context, name string) error {
	_, err := w.seenChannel(name)
	return err
}

func (w *world) podsShareClique(_ context.Context, a, b string) error {
	ca, _, pa, err := w.seenClique(a)
	if err != nil {
		return err
	}
	cb, _, pb, err := w.seenClique(b)
	if err != nil {
		return err
	}
	problems := append(pa, pb...)
	if len(problems) == 0 && ca != cb {
		problems = append(problems, fmt.Sprintf("pod %s sees GPUs of NVLink clique %s, pod %s of clique %s", a, ca, b, cb))
	}
	return kit.Findings(problems)
}

func (w *world) podsShareChannel(_ context.Context, a, b string) error {
	ca, err := w.seenChannel(a)
	if err != nil {
		return err
	}
	cb, err := w.seenChannel(b)
	if err != nil {
		return err
	}
	if ca != cb {
		return fmt.Errorf("pods %s and %s share the channel claim but see different IMEX channels: %s and %s", a, b, ca, cb)
	}
	return nil
}
