package slicelint

import (
	"context"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/lint"
	"drakit.dev/drakit/conformance/report"
)

// lintSteps judge the driver's ResourceSlices with the rules of
// drakit.dev/drakit/conformance/lint.
func (w *world) lintSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the kit can read the node's sysfs$`, Fn: w.sysfsReadable},
		{Pattern: `^the driver's ResourceSlices pass the lint rule "([^"]+)"$`, Fn: w.passLintRule},
	}
}

func (w *world) sysfsReadable(ctx context.Context) (context.Context, error) {
	if w.Driver.PCIVendor == "" {
		return kit.Skip(ctx, report.NotDeclaredPrefix+"the driver declares no PCI vendor and class of its devices (deviceKinds[].pci, or --pci-vendor and --pci-class)")
	}
	if w.Cfg.NodeSysfsRoot == "" {
		return kit.Skip(ctx, kit.SysfsSkipReason)
	}
	return ctx, nil
}

// lintInput gathers what the rules judge: the driver's slices, the Nodes
// and the other drivers of the cluster.
func (w *world) lintInput(ctx context.Context) (lint.Input, error) {
	in := lint.Input{Driver: w.Driver.DriverName, Identity: w.Driver.UUIDAttribute}
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
		if s.Spec.Driver != w.Driver.DriverName {
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
func (w *world) passLintRule(ctx context.Context, rule string) (context.Context, error) {
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
			ctx = kit.Warn(ctx, f.String())
			continue
		}
		msgs = append(msgs, f.String())
	}
	return ctx, kit.Findings(msgs)
}

// sysfsRule is a lint rule that compares the devices of a kind on a node
// with the node's PCI functions below its sysfs.
type sysfsRule func(in lint.Input, node, sysfs string, kind lint.PCIKind, inKind func(pool, device string) bool) ([]lint.Finding, error)

// sysfsFindings runs rule on the devices of the driver's classes on the
// node and the node's PCI functions.
func (w *world) sysfsFindings(ctx context.Context, in lint.Input, rule sysfsRule) ([]lint.Finding, error) {
	if w.Cfg.NodeSysfsRoot == "" || w.Driver.PCIVendor == "" {
		return nil, fmt.Errorf("%s (the scenario must start with \"the kit can read the node's sysfs\")", kit.SysfsSkipReason)
	}
	node, err := w.NodeName(ctx)
	if err != nil {
		return nil, err
	}
	ofKind := map[string]bool{}
	for _, class := range []string{w.Driver.DeviceClass(), w.Driver.PartitionClassName} {
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
	kind := lint.PCIKind{Vendor: w.Driver.PCIVendor, Class: w.Driver.PCIClass}
	return rule(in, node, w.Cfg.NodeSysfsRoot, kind, func(pool, device string) bool { return ofKind[pool+"/"+device] })
}
