package plaindriver

import (
	"strings"
)

// Variant is one row of the verdict matrix (scripts/verdict-matrix.sh): a
// correct style the kit must certify Conformant, or a defect it must find
// Not conformant with a finding that contains Finding. Each variant is
// deployed beside the others (deploy.PlainOptions.Variant = Name) and
// certified with the declaration of its style (DeclarationFile), renamed
// for the variant (Declaration).
type Variant struct {
	// Name names the variant's deployment and artifacts: the defect, or
	// the style for a correct one, shortened to MaxVariantName characters.
	Name   string
	Style  Style
	Defect Defect
	// Tags is the kit's --tags: the scenarios that target the defect, or
	// those a style's verdict rests on.
	Tags string
	// Finding is what summary.txt must contain for a defect.
	Finding string
	// NodeAccess gives the run the node's CDI and kubelet directories;
	// without it the container-side observers alone decide.
	NodeAccess bool
	// KitFlags are further flags of the run (shorter timeouts for what
	// never comes).
	KitFlags []string
	// Nodes is how many nodes the variant needs; the matrix leaves it out,
	// and says so, on a smaller cluster.
	Nodes int
	// Verified is false where Finding is read from the kit's step errors
	// but has not been seen in a live run yet.
	Verified bool
}

// Kind is "style" for a correct variant and "defect" for a broken one.
func (v Variant) Kind() string {
	if v.Defect == "" {
		return "style"
	}
	return "defect"
}

// DeclarationFile is the variant's style's declaration below dir
// (docs/examples/matrix): <style>.yaml.
func (v Variant) DeclarationFile() string { return string(v.Style.effective()) + ".yaml" }

// Tag filters of the matrix.
const (
	tagsContainer = "@kep-4381 && @core && ~@slices"
	tagsSlices    = "@kep-4381 && @core && @slices"
	tagsCore      = "@core"
	// tagsSmoke are the two scenarios of a pod that gets a device and of
	// its claim unprepared when it goes: what a driver whose prepare or
	// unprepare fails cannot pass, and where the kit first compares a
	// container with its allocation, which is enough to catch a defect in
	// what containers get (the styles run the whole of Core).
	tagsSmoke = "@smoke"
)

// The findings the kit's steps report, as summary.txt quotes them.
const (
	findingNotAllocated = "which is not allocated to the pod's claims"
	findingNeverRuns    = "to run; last seen"
	findingNotPending   = "expected it to stay pending as unschedulable"
	findingCDILeft      = "to remove the CDI devices of claim"
)

// Matrix returns the verdict matrix: every style, then every defect, each
// once. No row runs the cluster checks (@cluster-check): they judge the
// cluster, never the driver, and one cluster needs checking once.
func Matrix() []Variant {
	rows := matrixRows()
	for i := range rows {
		rows[i].Tags += " && ~@cluster-check"
	}
	return rows
}

func matrixRows() []Variant {
	return []Variant{
		{Name: "mounts", Style: StyleMounts, Tags: tagsCore, NodeAccess: true},
		{Name: "env-only", Style: StyleEnvOnly, Tags: tagsCore},
		{Name: "device-nodes", Style: StyleDeviceNodes, Tags: tagsCore, NodeAccess: true},
		{Name: "partitions", Style: StylePartitions, Tags: tagsCore, NodeAccess: true},
		{Name: "consumable", Style: StyleConsumableCapacity, Tags: tagsCore, NodeAccess: true},
		{Name: "strict-config", Style: StyleStrictConfig, Tags: tagsCore, NodeAccess: true},
		{Name: "multi-node", Style: StyleMounts, Tags: "@core,@multi-node", NodeAccess: true, Nodes: 2},

		{Name: "extra-device", Style: StyleMounts, Defect: DefectExtraDevice, Tags: tagsSmoke, Finding: findingNotAllocated, NodeAccess: true, Verified: true},
		// Without node directories: the container-side observers alone.
		{Name: "wrong-device", Style: StyleEnvOnly, Defect: DefectWrongDevice, Tags: tagsSmoke, Finding: findingNotAllocated},
		{Name: "missing-env", Style: StyleMounts, Defect: DefectMissingEnv, Tags: tagsSmoke, Finding: "no environment variable PLAIN_DEVICE_"},
		{Name: "env-wrong", Style: StyleMounts, Defect: DefectEnvWrongValue, Tags: tagsSmoke, Finding: "wants PLAIN_DEVICE_"},
		{Name: "mount-missing", Style: StyleMounts, Defect: DefectMountMissing, Tags: tagsSmoke, Finding: "/var/run/plain/dev-"},
		{Name: "mount-rw", Style: StyleMounts, Defect: DefectMountWritable, Tags: tagsSmoke, Finding: "/var/run/plain/dev-"},
		{Name: "node-missing", Style: StyleDeviceNodes, Defect: DefectDeviceNodeMissing, Tags: tagsSmoke, Finding: "/dev/plain/dev-"},
		{Name: "extra-node", Style: StyleDeviceNodes, Defect: DefectExtraDeviceNode, Tags: tagsSmoke, Finding: "/dev/plain/dev-"},
		{Name: "no-cdi-edits", Style: StyleMounts, Defect: DefectNoCDIEdits, Tags: tagsSmoke, Finding: "without a CDI device: the container cannot get it", NodeAccess: true},
		{Name: "bad-cdi-id", Style: StyleMounts, Defect: DefectUnresolvableCDIDevice, Tags: tagsSmoke, Finding: "unresolvable CDI devices", NodeAccess: true,
			KitFlags: []string{"--pod-start-timeout", "90s"}},
		{Name: "cfg-ignored", Style: StyleStrictConfig, Defect: DefectConfigIgnored, Tags: tagsContainer, Finding: "ignored the opaque config its declaration supplies", NodeAccess: true},
		{Name: "dup-names", Style: StyleMounts, Defect: DefectDuplicateDeviceNames, Tags: "@kep-4381 && @core && ~@slices",
			Finding: "to publish at least 1 devices in ResourceSlices", NodeAccess: true, KitFlags: []string{"--publish-timeout", "10s"}, Verified: true},
		{Name: "dup-identity", Style: StyleMounts, Defect: DefectDuplicateIdentity, Tags: tagsSlices, Finding: "is also the identity of device"},
		{Name: "attr-type", Style: StyleMounts, Defect: DefectAttributeType, Tags: tagsSlices, Finding: "resource.kubernetes.io/numaNode is the string"},
		{Name: "counters-over", Style: StylePartitions, Defect: DefectCountersOvercommitted, Tags: "@kep-4815 && @slices", Finding: "it can never be allocated"},
		{Name: "counters-low", Style: StylePartitions, Defect: DefectCountersUnderconsumed, Tags: "@kep-4815 && @core && ~@slices", Finding: findingNotPending, NodeAccess: true},
		{Name: "prepare-fails", Style: StyleMounts, Defect: DefectPrepareFails, Tags: tagsSmoke, Finding: "(defect prepare-fails)", NodeAccess: true,
			KitFlags: []string{"--pod-start-timeout", "90s"}},
		{Name: "prepare-slow", Style: StyleMounts, Defect: DefectPrepareSlow, Tags: tagsSmoke, Finding: "DeadlineExceeded", NodeAccess: true,
			KitFlags: []string{"--pod-start-timeout", "150s"}},
		{Name: "no-shares", Style: StyleConsumableCapacity, Defect: DefectSharesRefused, Tags: "@kep-5075 && @core", Finding: "(defect shares-refused)", NodeAccess: true,
			KitFlags: []string{"--pod-start-timeout", "90s"}},
		{Name: "admin-refused", Style: StyleMounts, Defect: DefectAdminAccessRefused, Tags: "@kep-5018 && ~@cluster-check", Finding: "(defect admin-access-refused)", NodeAccess: true,
			KitFlags: []string{"--pod-start-timeout", "90s"}},
		{Name: "prep-twice", Style: StyleMounts, Defect: DefectNotIdempotent, Tags: "@kep-4381 && @extended && ~@interpose", Finding: "not-idempotent", NodeAccess: true},
		{Name: "unprep-fails", Style: StyleMounts, Defect: DefectUnprepareFails, Tags: tagsSmoke, Finding: "does the driver's unprepare fail?", NodeAccess: true,
			KitFlags: []string{"--pod-start-timeout", "90s", "--cleanup-timeout", "30s"}},
		{Name: "leave-spec", Style: StyleMounts, Defect: DefectLeaveCDISpec, Tags: "@kep-4381 && @extended && ~@interpose", Finding: findingCDILeft, NodeAccess: true,
			KitFlags: []string{"--cleanup-timeout", "20s"}, Verified: true},
		{Name: "unprep-keeps", Style: StyleMounts, Defect: DefectUnprepareKeepsDevice, Tags: tagsSmoke, Finding: "(defect unprepare-keeps-device)", NodeAccess: true,
			KitFlags: []string{"--pod-start-timeout", "90s"}},
		{Name: "state-lost", Style: StyleMounts, Defect: DefectStateLost, Tags: "@kep-4381 && @extended && ~@interpose", Finding: findingCDILeft, NodeAccess: true,
			KitFlags: []string{"--cleanup-timeout", "20s"}},
	}
}

// Declaration renames a style's declaration (docs/examples/matrix, written
// for the default deployment) for the variant: the driver name, device
// classes and attribute domain plain.drakit.dev become
// <variant>.plain.drakit.dev, the pods' namespace drakit-plain and
// selector drakit-plain-driver drakit-plain-<variant>.
func (v Variant) Declaration(style []byte) []byte {
	name := "drakit-plain-" + v.Name
	r := strings.NewReplacer(
		DefaultDriverName, VariantDriverName(v.Name),
		"app.kubernetes.io/name=drakit-plain-driver", "app.kubernetes.io/name="+name,
		"namespace: drakit-plain\n", "namespace: "+name+"\n",
	)
	return []byte(r.Replace(string(style)))
}
