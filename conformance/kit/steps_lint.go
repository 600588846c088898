package kit

import (
	"context"
	"fmt"
	"sort"

	"github.com/cucumber/godog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/conformance/lint"
	"drakit.dev/drakit/conformance/report"
)

// lintSteps judge the driver's ResourceSlices with the rules of
// drakit.dev/drakit/conformance/lint.
func (w *World) lintSteps() []StepDef {
	return []StepDef{
		{Pattern: `^the kit can read the node's sysfs$`, Fn: w.sysfsReadable},
		{Pattern: `^the driver's ResourceSlices pass the lint rule "([^"]+)"$`, Fn: w.passLintRule},
	}
}

// sysfsSkipReason explains why the inventory rule cannot run.
const sysfsSkipReason = "the kit cannot read the node's sysfs: no --node-sysfs (drakit's emulated node: $DRAKIT_EMULATOR_ROOT/sys, a real node: /sys)"

func (w *World) sysfsReadable(ctx context.Context) (context.Context, error) {
	if w.Cfg.PCIVendor == "" {
		return Skip(ctx, report.NotDeclaredPrefix+"the driver declares no PCI vendor and class of its devices (deviceKinds[].pci, or --pci-vendor and --pci-class)")
	}
	if w.Cfg.NodeSysfsRoot == "" {
		return Skip(ctx, sysfsSkipReason)
	}
	return ctx, nil
}

// lintInput gathers what the rules judge: the driver's slices, the Nodes
// and the other drivers of the cluster.
func (w *World) lintInput(ctx context.Context) (lint.Input, error) {
	in := lint.Input{Driver: w.Cfg.DriverName, Identity: w.Cfg.UUIDAttribute}
	sl, err := w.DriverSlices(ctx)
	if err != nil {
		return in, err
	}
	in.Slices = sl
	nodes, err := w.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("list nodes: %w", err)
	}
	in.Nodes = nodes.Items
	all, err := w.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("list ResourceSlices: %w", err)
	}
	drivers := map[string]bool{}
	for _, s := range all.Items {
		if s.Spec.Driver != w.Cfg.DriverName {
			drivers[s.Spec.Driver] = true
		}
	}
	for d := range drivers {
		in.OtherDrivers = append(in.OtherDrivers, d)
	}
	sort.Strings(in.OtherDrivers)
	return in, nil
}

// passLintRule fails the scenario with the rule's findings; its warnings
// (parts of the rule no KEP or API requires) it only attaches.
func (w *World) passLintRule(ctx context.Context, rule string) (context.Context, error) {
	in, err := w.lintInput(ctx)
	if err != nil {
		return ctx, err
	}
	var found []lint.Finding
	switch rule {
	case lint.RuleInventory:
		if found, err = w.sysfsFindings(ctx, in, lint.Inventory); err != nil {
			return ctx, err
		}
	case lint.RuleNUMANode:
		if found, err = w.sysfsFindings(ctx, in, lint.NUMANode); err != nil {
			return ctx, err
		}
	default:
		check, ok := lint.Rules[rule]
		if !ok {
			return ctx, fmt.Errorf("no lint rule %q (known: %v)", rule, lint.RuleNames())
		}
		found = check(in)
	}
	var msgs []string
	for _, f := range found {
		if f.Warning {
			ctx = warn(ctx, f.String())
			continue
		}
		msgs = append(msgs, f.String())
	}
	return ctx, Findings(msgs)
}

// warn attaches a warning to the scenario: advice that no KEP or API
// requires, which the summary and the report list and the verdict never
// counts.
func warn(ctx context.Context, msg string) context.Context {
	klog.FromContext(ctx).Info("Warning, not counted in the verdict", "warning", msg)
	return godog.Attach(ctx, godog.Attachment{FileName: report.WarningAttachment, MediaType: "text/plain", Body: []byte(msg)})
}

// sysfsRule is a lint rule that compares the devices of a kind on a node
// with the node's PCI functions below its sysfs.
type sysfsRule func(in lint.Input, node, sysfs string, kind lint.PCIKind, inKind func(pool, device string) bool) ([]lint.Finding, error)

// sysfsFindings runs rule on the devices of the driver's classes on the
// node and the node's PCI functions.
func (w *World) sysfsFindings(ctx context.Context, in lint.Input, rule sysfsRule) ([]lint.Finding, error) {
	if w.Cfg.NodeSysfsRoot == "" || w.Cfg.PCIVendor == "" {
		return nil, fmt.Errorf("%s (the scenario must start with \"the kit can read the node's sysfs\")", sysfsSkipReason)
	}
	node, err := w.NodeName(ctx)
	if err != nil {
		return nil, err
	}
	ofKind := map[string]bool{}
	for _, class := range []string{w.Cfg.DeviceClass(), w.Cfg.PartitionClassName} {
		if class == "" {
			continue
		}
		devs, err := w.ClassDevices(ctx, class)
		if err != nil {
			return nil, err
		}
		for _, d := range devs {
			ofKind[d.ID()] = true
		}
	}
	kind := lint.PCIKind{Vendor: w.Cfg.PCIVendor, Class: w.Cfg.PCIClass}
	return rule(in, node, w.Cfg.NodeSysfsRoot, kind, func(pool, device string) bool { return ofKind[pool+"/"+device] })
}

// nodeName is Config.NodeName, else the cluster's only node.
func (w *World) NodeName(ctx context.Context) (string, error) {
	if w.Cfg.NodeName != "" {
		return w.Cfg.NodeName, nil
	}
	nodes, err := w.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list nodes: %w", err)
	}
	if len(nodes.Items) != 1 {
		return "", fmt.Errorf("the cluster has %d nodes: say which one the kit reads with --node-name", len(nodes.Items))
	}
	return nodes.Items[0].Name, nil
}
