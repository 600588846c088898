package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"drakit.dev/drakit/reference/plaindriver"
)

// localClusterPlainOptions are the paths drakit's local cluster uses, with
// the state in the run directory.
func localClusterPlainOptions() Options {
	o := DefaultOptions(KindPlain)
	run := "/home/dev/.local/state/drakit/cluster"
	o.KubeletRootDir = run + "/kubelet/root"
	o.CDIDir = run + "/cdi"
	o.StateDir = run + "/plain-driver"
	o.APIServerPort = 16443
	return o
}

func TestPlainObjectsGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		opts   func() Options
	}{
		{"plain-default.yaml", func() Options { return DefaultOptions(KindPlain) }},
		{"plain-local-cluster-extra-device.yaml", func() Options {
			o := localClusterPlainOptions()
			o.Devices, o.Defect = 2, plaindriver.DefectExtraDevice
			return o
		}},
		{"plain-variant-partitions.yaml", func() Options {
			o := localClusterPlainOptions()
			o.Variant, o.DriverName, o.Style, o.StateDir, o.HTTPPort = "parts", plaindriver.VariantDriverName("parts"), plaindriver.StylePartitions, o.StateDir+"-parts", 9501
			o.Defect = plaindriver.DefectCountersOvercommitted
			return o
		}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			m, err := Objects(tc.opts())
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, m.List(), tc.golden)
		})
	}
}

// TestPlainObjectsLeastPrivilege pins the plain driver pod's privileges: not
// privileged, no escalation, RuntimeDefault seccomp, a read-only root
// filesystem, every capability dropped and none added, exactly the four
// host directories it writes (each at its own path), no host namespace but
// the network.
func TestPlainObjectsLeastPrivilege(t *testing.T) {
	t.Parallel()
	opts := localClusterPlainOptions()
	m, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	pod, c := leastPrivilegePod(t, &m.DriverObjects)
	if c.ImagePullPolicy != corev1.PullNever || c.Image != "drakit.dev/driver:dev" {
		t.Errorf("image %s pulled %s, want drakit.dev/driver:dev never pulled", c.Image, c.ImagePullPolicy)
	}

	plugin := opts.KubeletRootDir + "/plugins/plain.drakit.dev"
	registrar := opts.KubeletRootDir + "/plugins_registry"
	wantMounts := map[string]hostMount{
		"plugin-dir":    sameHostPath(plugin, corev1.HostPathDirectoryOrCreate, false),
		"registrar-dir": sameHostPath(registrar, corev1.HostPathDirectory, false),
		"cdi-dir":       sameHostPath(opts.CDIDir, corev1.HostPathDirectoryOrCreate, false),
		"state-dir":     sameHostPath(opts.StateDir, corev1.HostPathDirectoryOrCreate, false),
	}
	if diff := cmp.Diff(wantMounts, hostMounts(t, pod, c)); diff != "" {
		t.Errorf("host mounts (-want +got):\n%s", diff)
	}

	wantArgs := []string{
		"--kind=plain",
		"--driver-name=plain.drakit.dev",
		"--devices=4",
		"--style=",
		"--defect=",
		"--state-dir=" + opts.StateDir,
		"--cdi-dir=" + opts.CDIDir,
		"--kubelet-registrar-dir=" + registrar,
		"--kubelet-plugin-dir=" + plugin,
		"--v=4",
		"--http-endpoint=127.0.0.1:9474",
	}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		}
	}
	wantEnv := map[string]string{"NODE_NAME": "fieldRef:spec.nodeName", "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "16443"}
	if diff := cmp.Diff(wantEnv, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

// TestPlainObjectsSubstitute: the driver name, devices, defect and
// apiserver options reach the flags, the DeviceClass and the policy.
func TestPlainObjectsSubstitute(t *testing.T) {
	t.Parallel()
	opts := DefaultOptions(KindPlain)
	opts.DriverName, opts.Devices, opts.Defect = "plain.example.com", 9, plaindriver.DefectLeaveCDISpec
	opts.APIServerHost, opts.APIServerPort = "", 0
	m, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	c := m.DaemonSet.Spec.Template.Spec.Containers[0]
	for _, want := range []string{"--driver-name=plain.example.com", "--devices=9", "--defect=leave-cdi-spec",
		"--kubelet-plugin-dir=/var/lib/kubelet/plugins/plain.example.com"} {
		if !strings.Contains(strings.Join(c.Args, " "), want) {
			t.Errorf("args %q lack %s", c.Args, want)
		}
	}
	if len(c.Env) != 1 || c.Env[0].Name != "NODE_NAME" {
		t.Errorf("env %+v, want NODE_NAME only without an apiserver host", c.Env)
	}
	if got := m.DeviceClass.Name + ": " + m.DeviceClass.Spec.Selectors[0].CEL.Expression; got != `plain.example.com: device.driver == "plain.example.com"` {
		t.Errorf("device class %s", got)
	}
	p := compilePolicy(t, m.Policy)
	plainSA := serviceAccountOn(plainWorkload(""), "node-a")
	if got := p.admit(t, admission.Create, slice("plain.example.com", "node-a"), nil, plainSA); got != nil {
		t.Errorf("renamed driver creating its own slice: denied %q", got)
	}
	if got := p.admit(t, admission.Create, slice("plain.drakit.dev", "node-a"), nil, plainSA); len(got) != 1 {
		t.Errorf("renamed driver creating a slice of plain.drakit.dev: denials %q, want one", got)
	}
}

// TestPlainPolicy: the plain driver's policy is the reference driver's but
// for its service account and driver name; it limits the plain driver's
// service account to its slices on its node, and the two drivers' policies
// do not match each other's service account.
func TestPlainPolicy(t *testing.T) {
	t.Parallel()
	plain, err := Objects(DefaultOptions(KindPlain))
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := Objects(DefaultOptions(KindGPU))
	if err != nil {
		t.Fatal(err)
	}
	wantMatch := []admissionregistrationv1.MatchCondition{{
		Name:       "driver-service-account",
		Expression: fmt.Sprintf("request.userInfo.username == %q", serviceaccount.MakeUsername(PlainNamespace, PlainName)),
	}}
	if diff := cmp.Diff(wantMatch, plain.Policy.Spec.MatchConditions); diff != "" {
		t.Errorf("match conditions (-want +got):\n%s", diff)
	}
	same := plain.Policy.Spec.DeepCopy()
	same.MatchConditions = gpu.Policy.Spec.MatchConditions
	for i := range same.Variables {
		if same.Variables[i].Name == "driverName" {
			same.Variables[i].Expression = `"gpu.drakit.dev"`
		}
	}
	if diff := cmp.Diff(&gpu.Policy.Spec, same); diff != "" {
		t.Errorf("plain policy differs from the reference driver's in more than the service account and driver (-gpu +plain):\n%s", diff)
	}
	if got, want := plain.PolicyBinding.Spec, (admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
		PolicyName: PlainName, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
	}); !cmp.Equal(want, got) {
		t.Errorf("policy binding %+v, want %+v", got, want)
	}
	if diff := cmp.Diff(gpu.ClusterRole.Rules, plain.ClusterRole.Rules); diff != "" {
		t.Errorf("cluster role rules differ from the reference driver's (-gpu +plain):\n%s", diff)
	}
	if s := plain.ClusterRoleBinding.Subjects; len(s) != 1 || s[0].Name != PlainName || s[0].Namespace != PlainNamespace ||
		plain.ClusterRoleBinding.RoleRef.Name != plain.ClusterRole.Name {
		t.Errorf("cluster role binding %+v does not bind %s to %s/%s", plain.ClusterRoleBinding, plain.ClusterRole.Name, PlainNamespace, PlainName)
	}

	pp, gp := compilePolicy(t, plain.Policy), compilePolicy(t, gpu.Policy)
	const driver = "plain.drakit.dev"
	plainSA := serviceAccountOn(plainWorkload(""), "node-a")
	for _, tc := range []struct {
		name string
		p    *compiledPolicy
		op   admission.Operation
		obj  bool
		s    string // driver of the slice
		node string
		want []string
	}{
		{"create-own-node", pp, admission.Create, true, driver, "node-a", nil},
		{"delete-own-node", pp, admission.Delete, false, driver, "node-a", nil},
		{"create-other-node", pp, admission.Create, true, driver, "node-b", []string{"the driver on node node-a may not modify ResourceSlices of node node-b"}},
		{"create-gpu-slice", pp, admission.Create, true, "gpu.drakit.dev", "node-a", []string{
			"the driver's service account may modify only ResourceSlices of driver plain.drakit.dev, not of gpu.drakit.dev"}},
		{"gpu-policy-does-not-match-plain", gp, admission.Create, true, driver, "node-b", nil},
	} {
		var obj, old = slice(tc.s, tc.node), slice(tc.s, tc.node)
		if tc.obj {
			old = nil
		} else {
			obj = nil
		}
		if diff := cmp.Diff(tc.want, tc.p.admit(t, tc.op, obj, old, plainSA)); diff != "" {
			t.Errorf("%s: denials (-want +got):\n%s", tc.name, diff)
		}
	}
	if got := pp.admit(t, admission.Create, slice("gpu.drakit.dev", "node-b"), nil, driverOn("node-a")); got != nil {
		t.Errorf("the plain policy matched the reference driver's service account: %q", got)
	}
}

func TestPlainOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		mutate   func(*Options)
		wantErrs []string
	}{
		{"valid-defaults", func(*Options) {}, nil},
		{"valid-local-cluster", func(o *Options) { *o = localClusterPlainOptions() }, nil},
		{"valid-every-defect", func(o *Options) { o.Defect = plaindriver.DefectDuplicateDeviceNames }, nil},
		{"unknown-defect", func(o *Options) { o.Defect = "slow" }, []string{
			`Defect (--defect): unknown defect "slow" (known: extra-device, wrong-device, missing-env, env-wrong-value, mount-missing, mount-writable, device-node-missing, extra-device-node, no-cdi-edits, unresolvable-cdi-device, config-ignored, duplicate-device-names, duplicate-identity, attribute-type, counters-overcommitted, counters-underconsumed, prepare-fails, prepare-slow, shares-refused, admin-access-refused, not-idempotent, unprepare-fails, leave-cdi-spec, unprepare-keeps-device, state-lost-on-restart; empty for none)`,
		}},
		{"devices", func(o *Options) { o.Devices = 0 }, []string{"Devices (--devices): 0 devices: must be between 1 and 128"}},
		{"devices-for-extra-device", func(o *Options) { o.Devices, o.Defect = 1, plaindriver.DefectExtraDevice }, []string{
			"Devices (--devices): 1 devices: must be between 2 and 128 with defect extra-device",
		}},
		{"state-dir-system", func(o *Options) { o.StateDir = "/var/lib" }, []string{
			`StateDir (--state-dir) "/var/lib" is a system directory: the driver pod would mount it from the host`,
		}},
		{"state-dir-in-cdi-dir", func(o *Options) { o.StateDir = o.CDIDir + "/state" }, []string{
			`CDIDir (--cdi-dir) "/var/run/cdi" and StateDir (--state-dir) "/var/run/cdi/state" overlap: ` +
				`each is mounted with its own access, so neither may contain the other`,
		}},
		{"state-dir-in-kubelet-root", func(o *Options) { o.StateDir = o.KubeletRootDir + "/plain" }, []string{
			`KubeletRootDir (--kubelet-root-dir) "/var/lib/kubelet" and StateDir (--state-dir) "/var/lib/kubelet/plain" overlap: ` +
				`each is mounted with its own access, so neither may contain the other`,
		}},
		{"everything-at-once", func(o *Options) {
			o.DriverName, o.Image, o.StateDir, o.APIServerPort, o.Timeout = strings.Repeat("p", 64), "", "state", 0, 0
		}, []string{
			`DriverName (--driver-name) "` + strings.Repeat("p", 64) + `" is longer than 63 characters`,
			"Image (--image) is required",
			`StateDir (--state-dir) "state" must be a clean absolute path`,
			"APIServerPort (--apiserver-port) 0 is not a port",
			"Timeout (--timeout) 0s must be positive",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := DefaultOptions(KindPlain)
			tc.mutate(&o)
			_, objErr := Objects(o)
			checkValidateErrors(t, o.Validate(), tc.wantErrs, objErr)
		})
	}
}

// TestApplyPlainBesideTheReferenceDriver: ApplyPlain creates the plain
// deployment and waits for its slice, next to a deployed reference driver,
// and DeletePlain removes it and leaves the reference driver alone.
func TestApplyPlainBesideTheReferenceDriver(t *testing.T) {
	t.Parallel()
	opts := DefaultOptions(KindPlain)
	opts.Timeout = 10 * time.Second
	checkBesideTheReferenceDriver(t, besideTheReferenceDriver{
		w: plainWorkload(""), driverName: opts.DriverName, classes: []string{opts.DriverName},
		apply:     func(ctx context.Context, client kubernetes.Interface) error { return Apply(ctx, client, opts) },
		remove:    func(ctx context.Context, client kubernetes.Interface) error { return Delete(ctx, client, opts) },
		applyName: "ApplyPlain", removeName: "DeletePlain",
		objects: func() (*DriverObjects, error) {
			m, err := Objects(opts)
			if err != nil {
				return nil, err
			}
			return &m.DriverObjects, nil
		},
	})
}

// TestApplyPlainWithoutSlices: a driver that publishes no slice is not
// ready, unless it runs with duplicate-device-names, which publishes none
// by design; then ApplyPlain removes the driver's slices an earlier run
// left, and no other driver's.
func TestApplyPlainWithoutSlices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		defect  plaindriver.Defect
		wantErr string
	}{
		{"", "driver plain.drakit.dev after 300ms: no ResourceSlice of plain.drakit.dev for node(s) 127.0.0.1 yet"},
		{plaindriver.DefectExtraDevice, "no ResourceSlice of plain.drakit.dev for node(s) 127.0.0.1 yet"},
		{plaindriver.DefectDuplicateDeviceNames, ""},
	} {
		t.Run("defect="+string(tc.defect), func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			opts := DefaultOptions(KindPlain)
			opts.Defect, opts.Timeout = tc.defect, 300*time.Millisecond
			// A slice an earlier, correct run left.
			stale := &resourceapi.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{Name: "0000-plain.drakit.dev-127.0.0.1-old"},
				Spec: resourceapi.ResourceSliceSpec{Driver: opts.DriverName, NodeName: new(testNode),
					Pool: resourceapi.ResourcePool{Name: testNode, ResourceSliceCount: 1}},
			}
			other := stale.DeepCopy()
			other.Name, other.Spec.Driver = "0000-gpu.drakit.dev-127.0.0.1-x", "gpu.drakit.dev"
			for _, s := range []*resourceapi.ResourceSlice{stale, other} {
				if _, err := client.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.wantErr != "" {
				// Not the node's slice any more: the pod is Ready, no
				// slice of this node is there.
				stale.Spec.NodeName = new("node-b")
				if _, err := client.ResourceV1().ResourceSlices().Update(ctx, stale, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			simulateWorkload(ctx, t, client, plainWorkload(""), opts.DriverName, false)
			err := Apply(ctx, client, opts)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("ApplyPlain: %v", err)
			case tc.wantErr != "" && (!errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("ApplyPlain: %v, want ErrNotReady with %q", err, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), "pod drakit-plain/drakit-plain-driver-abcde"):
				t.Errorf("ApplyPlain error lacks the pod's diagnostics: %v", err)
			}
			slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range slices.Items {
				names = append(names, s.Name)
			}
			want := []string{other.Name, stale.Name}
			if tc.wantErr == "" {
				want = []string{other.Name} // the stale slice of the driver is gone
			}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("slices after ApplyPlain (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyPlainRejectsInvalidOptions(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	opts := DefaultOptions(KindPlain)
	opts.Defect = "slow"
	for name, call := range map[string]func() error{
		"ApplyPlain":  func() error { return Apply(t.Context(), client, opts) },
		"DeletePlain": func() error { return Delete(t.Context(), client, opts) },
	} {
		if err := call(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: %v, want ErrInvalidOptions", name, err)
		}
	}
	if nss, _ := client.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); len(nss.Items) != 0 {
		t.Errorf("invalid options still created %d namespaces", len(nss.Items))
	}
}

// TestPlainVariantsSideBySide: two variants' objects collide nowhere: no
// cluster-scoped name, no namespaced name in a shared namespace, no host
// path of their own, no port, no pod label selecting the other's pods and
// no admission policy matching the other's service account.
func TestPlainVariantsSideBySide(t *testing.T) {
	t.Parallel()
	variant := func(name string, port int, s plaindriver.Style) Options {
		o := localClusterPlainOptions()
		o.Variant, o.DriverName, o.Style, o.StateDir, o.HTTPPort = name, plaindriver.VariantDriverName(name), s, o.StateDir+"-"+name, port
		return o
	}
	a, err := Objects(variant("env-only", 9501, plaindriver.StyleEnvOnly))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Objects(variant("partitions", 9502, plaindriver.StylePartitions))
	if err != nil {
		t.Fatal(err)
	}
	def, err := Objects(localClusterPlainOptions())
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ kind, namespace, name string }
	keys := func(m *Manifests) map[key]bool {
		out := map[key]bool{}
		for _, obj := range m.List() {
			o := obj.(metav1.Object)
			out[key{fmt.Sprintf("%T", obj), o.GetNamespace(), o.GetName()}] = true
		}
		return out
	}
	ka, kb, kd := keys(a), keys(b), keys(def)
	for k := range ka {
		if kb[k] || kd[k] {
			t.Errorf("%v is in both deployments", k)
		}
	}
	for k := range kb {
		if kd[k] {
			t.Errorf("%v is in the variant and the default deployment", k)
		}
	}
	if len(b.Classes) != 1 || b.Classes[0].Name != "partition.partitions.plain.drakit.dev" {
		t.Errorf("partitions style's kind classes %v, want partition.partitions.plain.drakit.dev", b.Classes)
	}
	for _, m := range []*Manifests{a, b} {
		ns := m.Namespace.Name
		if m.DaemonSet.Namespace != ns || m.ServiceAccount.Namespace != ns || m.ClusterRoleBinding.Subjects[0].Namespace != ns {
			t.Errorf("%s: the DaemonSet, service account and role binding subject are not all in namespace %s", m.DaemonSet.Name, ns)
		}
		sa := serviceaccount.MakeUsername(ns, m.ServiceAccount.Name)
		if got := m.Policy.Spec.MatchConditions[0].Expression; !strings.Contains(got, `"`+sa+`"`) {
			t.Errorf("policy %s matches %s, want %s", m.Policy.Name, got, sa)
		}
		if m.DaemonSet.Spec.Template.Spec.ServiceAccountName != m.ServiceAccount.Name || m.ClusterRoleBinding.Subjects[0].Name != m.ServiceAccount.Name ||
			m.ClusterRoleBinding.RoleRef.Name != m.ClusterRole.Name || m.PolicyBinding.Spec.PolicyName != m.Policy.Name {
			t.Errorf("%s: the objects do not refer to each other", m.DaemonSet.Name)
		}
		if got, want := m.DaemonSet.Spec.Selector.MatchLabels[AppLabel], m.DaemonSet.Name; got != want || m.DaemonSet.Spec.Template.Labels[AppLabel] != want {
			t.Errorf("DaemonSet %s selects %s=%s, want its own name", m.DaemonSet.Name, AppLabel, got)
		}
	}
	if sa, sb := a.DaemonSet.Spec.Selector.MatchLabels[AppLabel], b.DaemonSet.Spec.Selector.MatchLabels[AppLabel]; sa == sb {
		t.Errorf("both DaemonSets select %s=%s", AppLabel, sa)
	}
	paths := map[string]string{}
	for _, m := range []*Manifests{a, b} {
		for _, v := range m.DaemonSet.Spec.Template.Spec.Volumes {
			if v.Name == "registrar-dir" || v.Name == "cdi-dir" {
				continue // shared by every driver on the node
			}
			if other, ok := paths[v.HostPath.Path]; ok {
				t.Errorf("host path %s is both %s's and %s's", v.HostPath.Path, other, m.DaemonSet.Name)
			}
			paths[v.HostPath.Path] = m.DaemonSet.Name
		}
	}
	if pa, pb := a.DaemonSet.Spec.Template.Spec.Containers[0].LivenessProbe.HTTPGet.Port, b.DaemonSet.Spec.Template.Spec.Containers[0].LivenessProbe.HTTPGet.Port; pa == pb {
		t.Errorf("both listen on port %s", pa.String())
	}
}

func TestPlainVariantValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"bad-variant", func(o *Options) { o.Variant = "Bad_Name" }, "Variant (--variant): variant \"Bad_Name\""},
		{"long-variant", func(o *Options) { o.Variant = strings.Repeat("a", 14) }, "has 14 characters, at most 13"},
		{"bad-style", func(o *Options) { o.Style = "x" }, "Style (--style): unknown style \"x\""},
		{"defect-needs-style", func(o *Options) { o.Style, o.Defect = plaindriver.StyleEnvOnly, plaindriver.DefectMountWritable },
			"Defect (--defect): defect mount-writable needs style mounts, not env-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := DefaultOptions(KindPlain)
			tc.mutate(&o)
			err := o.Validate()
			if err == nil || !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want ErrInvalidOptions with %q", err, tc.want)
			}
		})
	}
}

// TestPlainMatrixVariantsDeploy: every variant of the verdict matrix
// deploys beside the others on drakit's local cluster: its options are
// valid (socket paths included) and its objects collide with no other
// variant's.
func TestPlainMatrixVariantsDeploy(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for i, v := range plaindriver.Matrix() {
		o := localClusterPlainOptions()
		o.Variant, o.DriverName, o.Style, o.Defect = v.Name, plaindriver.VariantDriverName(v.Name), v.Style, v.Defect
		o.StateDir, o.HTTPPort = o.StateDir+"-"+v.Name, 9501+i
		m, err := Objects(o)
		if err != nil {
			t.Errorf("variant %s: %v", v.Name, err)
			continue
		}
		for _, obj := range m.List() {
			meta := obj.(metav1.Object)
			k := fmt.Sprintf("%T %s/%s", obj, meta.GetNamespace(), meta.GetName())
			if other, ok := seen[k]; ok {
				t.Errorf("%s is variant %s's and %s's", k, other, v.Name)
			}
			seen[k] = v.Name
		}
	}
}
