package helm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/reference/deploy"
)

// The charts' directories, each the name of the release the tests install,
// so that the chart's names are reference/deploy's (deploy.Name,
// deploy.NICName, deploy.CPUName).
const (
	gpuChart = "drakit-driver"
	nicChart = "drakit-nic-driver"
	cpuChart = "drakit-cpu-driver"
)

// helmLabels are the labels only the chart adds (Helm's conventions); the
// comparison leaves them out, and every rendered object must carry them.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}

// kubeVersion is the cluster version the chart is rendered for.
var kubeVersion = &common.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}

// render installs chartDir client-only (helm install --dry-run=client, what
// helm template does) as a release named like the chart's directory, in
// namespace default, with the values set (each as --set would take it) and
// returns the manifest.
func render(chartDir string, set ...string) (string, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return "", fmt.Errorf("load chart %s: %w", chartDir, err)
	}
	vals := map[string]any{}
	for _, s := range set {
		if err := strvals.ParseInto(s, vals); err != nil {
			return "", fmt.Errorf("parse --set %s: %w", s, err)
		}
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
	install := action.NewInstall(cfg)
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = filepath.Base(chartDir)
	install.Namespace = "default"
	install.KubeVersion = kubeVersion
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return "", fmt.Errorf("render chart %s with %q: %w", chartDir, set, err)
	}
	r, ok := rel.(*releasev1.Release)
	if !ok {
		return "", fmt.Errorf("render chart %s: release is a %T", chartDir, rel)
	}
	return r.Manifest, nil
}

// objectKey names an object: kind, namespace and name.
type objectKey struct{ kind, namespace, name string }

func (k objectKey) String() string {
	if k.namespace == "" {
		return k.kind + " " + k.name
	}
	return k.kind + " " + k.namespace + "/" + k.name
}

func keyOf(obj runtime.Object) (objectKey, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return objectKey{}, fmt.Errorf("access metadata of %T: %w", obj, err)
	}
	return objectKey{obj.GetObjectKind().GroupVersionKind().Kind, m.GetNamespace(), m.GetName()}, nil
}

// index keys objs; a key twice is an error.
func index(objs []runtime.Object) (map[objectKey]runtime.Object, error) {
	out := map[objectKey]runtime.Object{}
	for _, obj := range objs {
		k, err := keyOf(obj)
		if err != nil {
			return nil, err
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s twice", k)
		}
		out[k] = obj
	}
	return out, nil
}

// decodeManifest decodes every document of a rendered manifest strictly
// (an unknown field is an error) into the typed object of its kind.
func decodeManifest(manifest string) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read manifest: %w", err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("decode type of %s: %w", doc, err)
		}
		if tm.Kind == "" {
			continue // a document of comments only
		}
		obj, err := scheme.Scheme.New(tm.GroupVersionKind())
		if err != nil {
			return nil, fmt.Errorf("new %s: %w", tm.GroupVersionKind(), err)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("decode %s: %w\n%s", tm.GroupVersionKind(), err, doc)
		}
		objs = append(objs, obj)
	}
}

// dropHelmLabels removes helmLabels from obj's labels and its pod
// template's, and reports those that any of them lacks.
func dropHelmLabels(obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("access metadata of %T: %w", obj, err)
	}
	sets := map[string]map[string]string{"metadata.labels": m.GetLabels()}
	switch o := obj.(type) {
	case *appsv1.DaemonSet:
		sets["spec.template.metadata.labels"] = o.Spec.Template.Labels
	case *appsv1.Deployment:
		sets["spec.template.metadata.labels"] = o.Spec.Template.Labels
	}
	var missing []string
	for where, labels := range sets {
		for _, l := range helmLabels {
			if _, ok := labels[l]; !ok {
				missing = append(missing, where+" "+l)
			}
			delete(labels, l)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("no label %s", strings.Join(missing, ", "))
	}
	return nil
}

// compare reports every object of want that got lacks or has otherwise,
// by kind, namespace and name with the differing fields, and every object
// of got that want lacks.
func compare(want, got []runtime.Object) error {
	w, err := index(want)
	if err != nil {
		return fmt.Errorf("reference/deploy objects: %w", err)
	}
	g, err := index(got)
	if err != nil {
		return fmt.Errorf("chart objects: %w", err)
	}
	var errs []error
	for k, wo := range w {
		gotObj, ok := g[k]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: reference/deploy creates it, the chart does not", k))
			continue
		}
		if diff := cmp.Diff(wo, gotObj); diff != "" {
			errs = append(errs, fmt.Errorf("%s differs (-reference/deploy +chart):\n%s", k, diff))
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			errs = append(errs, fmt.Errorf("%s: the chart renders it, reference/deploy does not", k))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// renderObjects renders chartDir with set and returns its objects without
// the Helm labels (each must have them).
func renderObjects(t *testing.T, chartDir string, set ...string) []runtime.Object {
	t.Helper()
	manifest, err := render(chartDir, set...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if err := dropHelmLabels(obj); err != nil {
			k, _ := keyOf(obj)
			t.Errorf("chart object %s: %v", k, err)
		}
	}
	return objs
}

// gpuCases are value sets of the GPU chart and the reference/deploy
// options they stand for: the defaults and each option.
var gpuCases = []struct {
	name string
	set  []string
	opts func(*deploy.Options)
}{
	{"defaults", nil, func(*deploy.Options) {}},
	{"driver name", []string{"driverName=gpu.example.com"}, func(o *deploy.Options) { o.DriverName = "gpu.example.com" }},
	{"image", []string{"image.repository=registry.example/drakit/driver,image.tag=v1.2.3"},
		func(o *deploy.Options) { o.Image = "registry.example/drakit/driver:v1.2.3" }},
	{"kubelet root dir", []string{"kubeletRootDir=/var/lib/k8s/kubelet"}, func(o *deploy.Options) { o.KubeletRootDir = "/var/lib/k8s/kubelet" }},
	{"registrar dir", []string{"registrarDir=/var/lib/kubelet/drakit-interpose/registry"},
		func(o *deploy.Options) { o.RegistrarDir = "/var/lib/kubelet/drakit-interpose/registry" }},
	{"CDI dir", []string{"cdiDir=/etc/cdi"}, func(o *deploy.Options) { o.CDIDir = "/etc/cdi" }},
	{"driver root", []string{"driverRoot=/run/nvidia/driver"}, func(o *deploy.Options) { o.DriverRoot = "/run/nvidia/driver" }},
	{"apiserver", []string{"apiServer.host=10.0.0.1,apiServer.port=443"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "10.0.0.1", 443 }},
	{"kubelet's apiserver", []string{"apiServer.host=,apiServer.port=0"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "", 0 }},
	{"partitionable alpha", []string{"partitionableAlpha=true"}, func(o *deploy.Options) { o.PartitionableAlpha = true }},
	{"no device metadata", []string{"deviceMetadata=false"}, func(o *deploy.Options) { o.DeviceMetadata = false }},
	{"binding conditions", []string{"bindingConditions=true"}, func(o *deploy.Options) { o.BindingConditions = true }},
	{"list attributes", []string{"listAttributes=true"}, func(o *deploy.Options) { o.ListAttributes = true }},
	{"runtime class", []string{"runtimeClassName=drakit-mig-manager"}, func(o *deploy.Options) { o.RuntimeClassName = "drakit-mig-manager" }},
	{"privileged", []string{"privileged=true"}, func(o *deploy.Options) { o.Privileged = true }},
	{"IMEX controller", []string{"imex.channels=8"}, func(o *deploy.Options) { o.IMEXChannels = 8 }},
	{"IMEX controller with the kubelet's apiserver", []string{"imex.channels=2048", "apiServer.host=", "apiServer.port=0"},
		func(o *deploy.Options) { o.IMEXChannels, o.APIServerHost, o.APIServerPort = 2048, "", 0 }},
	{"every option", []string{
		"driverName=gpu.example.com", "image.repository=registry.example/driver", "image.tag=v2",
		"kubeletRootDir=/var/lib/k8s/kubelet", "registrarDir=/var/lib/k8s/kubelet/interposed",
		"cdiDir=/etc/cdi", "driverRoot=/run/nvidia/driver", "apiServer.host=192.168.1.1", "apiServer.port=6444",
		"partitionableAlpha=true", "deviceMetadata=false", "bindingConditions=true", "listAttributes=true",
		"runtimeClassName=nvidia", "privileged=true", "imex.channels=4",
	}, func(o *deploy.Options) {
		*o = deploy.Options{
			DriverName: "gpu.example.com", Image: "registry.example/driver:v2",
			KubeletRootDir: "/var/lib/k8s/kubelet", RegistrarDir: "/var/lib/k8s/kubelet/interposed",
			CDIDir: "/etc/cdi", DriverRoot: "/run/nvidia/driver", APIServerHost: "192.168.1.1", APIServerPort: 6444,
			PartitionableAlpha: true, DeviceMetadata: false, BindingConditions: true, ListAttributes: true,
			RuntimeClassName: "nvidia", Privileged: true, IMEXChannels: 4, Timeout: o.Timeout,
		}
	}},
}

// TestGPUChartIsReferenceDeploy renders the chart for each case and
// compares its objects with reference/deploy's for the same options.
func TestGPUChartIsReferenceDeploy(t *testing.T) {
	for _, tc := range gpuCases {
		t.Run(tc.name, func(t *testing.T) {
			opts := deploy.DefaultOptions()
			tc.opts(&opts)
			m, err := deploy.Objects(opts)
			if err != nil {
				t.Fatalf("reference/deploy objects: %v", err)
			}
			want := m.List()
			got := renderObjects(t, gpuChart, tc.set...)
			if err := compare(want, got); err != nil {
				t.Errorf("chart with %q against reference/deploy with %+v:\n%v", tc.set, opts, err)
			}
			// 8 objects and the MIG class, 5 more with the IMEX controller.
			wantCount := 9
			if opts.IMEXChannels > 0 {
				wantCount = 14
			}
			if len(got) != wantCount {
				t.Errorf("chart rendered %d objects, want %d", len(got), wantCount)
			}
		})
	}
}

// TestChartsLint: helm lint finds nothing worse than information (such
// as the chart having no icon).
func TestChartsLint(t *testing.T) {
	for _, chart := range []string{gpuChart, nicChart, cpuChart} {
		linter := lint.RunAll(chart, nil, "default", lint.WithKubeVersion(kubeVersion))
		for _, msg := range linter.Messages {
			if msg.Severity > support.InfoSev {
				t.Errorf("helm lint %s: %v", chart, msg)
			}
		}
	}
}

// TestGPUChartNamespaceNotCreated: namespace.create=false leaves only the
// Namespace out.
func TestGPUChartNamespaceNotCreated(t *testing.T) {
	m, err := deploy.Objects(deploy.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(m.List(), func(o runtime.Object) bool {
		return o.GetObjectKind().GroupVersionKind().Kind == "Namespace"
	})
	if err := compare(want, renderObjects(t, gpuChart, "namespace.create=false")); err != nil {
		t.Error(err)
	}
}

// TestCompareReportsDrift: the comparison names the object and the field
// that differ, and objects only one side has.
func TestCompareReportsDrift(t *testing.T) {
	m, err := deploy.Objects(deploy.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	got := renderObjects(t, gpuChart)
	var drifted []runtime.Object
	for _, obj := range got {
		if ds, ok := obj.(*appsv1.DaemonSet); ok {
			ds.Spec.Template.Spec.Containers[0].Args[0] = "--driver-name=other.example.com"
		}
		k, err := keyOf(obj)
		if err != nil {
			t.Fatal(err)
		}
		if k.kind != "ValidatingAdmissionPolicyBinding" {
			drifted = append(drifted, obj)
		}
	}
	err = compare(m.List(), drifted)
	if err == nil {
		t.Fatal("compare found no drift")
	}
	for _, want := range []string{
		"DaemonSet drakit-system/drakit-driver differs", "Args", "--driver-name=other.example.com",
		"ValidatingAdmissionPolicyBinding drakit-driver: reference/deploy creates it, the chart does not",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("drift report lacks %q:\n%v", want, err)
		}
	}
	if err := compare(got[:1], got); err == nil || !strings.Contains(err.Error(), "the chart renders it, reference/deploy does not") {
		t.Errorf("an extra chart object: got %v", err)
	}
}

// TestGPUChartRefusesWhatDeployRefuses: values that reference/deploy's
// Options.Validate refuses fail to render.
func TestGPUChartRefusesWhatDeployRefuses(t *testing.T) {
	for _, tc := range []struct {
		set  string
		opts func(*deploy.Options)
	}{
		{"driverName=GPU_drakit", func(o *deploy.Options) { o.DriverName = "GPU_drakit" }},
		{"driverName=" + strings.Repeat("a", 60) + ".dev", func(o *deploy.Options) { o.DriverName = strings.Repeat("a", 60) + ".dev" }},
		{"cdiDir=var/run/cdi", func(o *deploy.Options) { o.CDIDir = "var/run/cdi" }},
		{"kubeletRootDir=/var/lib/kubelet/", func(o *deploy.Options) { o.KubeletRootDir = "/var/lib/kubelet/" }},
		{"driverRoot=/opt/../emulator", func(o *deploy.Options) { o.DriverRoot = "/opt/../emulator" }},
		{"registrarDir=/var/lib/registry", func(o *deploy.Options) { o.RegistrarDir = "/var/lib/registry" }},
		{"apiServer.port=70000", func(o *deploy.Options) { o.APIServerPort = 70000 }},
		{"apiServer.host=,apiServer.port=6443", func(o *deploy.Options) { o.APIServerHost = "" }},
		{"imex.channels=2049", func(o *deploy.Options) { o.IMEXChannels = 2049 }},
		{"imex.channels=-1", func(o *deploy.Options) { o.IMEXChannels = -1 }},
		{"runtimeClassName=Nvidia_Runtime", func(o *deploy.Options) { o.RuntimeClassName = "Nvidia_Runtime" }},
	} {
		t.Run(tc.set, func(t *testing.T) {
			opts := deploy.DefaultOptions()
			tc.opts(&opts)
			if err := opts.Validate(); err == nil {
				t.Fatalf("reference/deploy accepts %+v", opts)
			}
			_, err := render(gpuChart, tc.set)
			if err == nil {
				t.Fatalf("chart renders with %s", tc.set)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// nicCases are value sets of the NIC chart and the reference/deploy
// options they stand for: the defaults and each option.
var nicCases = []struct {
	name string
	set  []string
	opts func(*deploy.NICOptions)
}{
	{"defaults", nil, func(*deploy.NICOptions) {}},
	{"driver name", []string{"driverName=nic.example.com"}, func(o *deploy.NICOptions) { o.DriverName = "nic.example.com" }},
	{"image", []string{"image.repository=registry.example/drakit/driver,image.tag=v1.2.3"},
		func(o *deploy.NICOptions) { o.Image = "registry.example/drakit/driver:v1.2.3" }},
	{"kubelet root dir", []string{"kubeletRootDir=/var/lib/k8s/kubelet"}, func(o *deploy.NICOptions) { o.KubeletRootDir = "/var/lib/k8s/kubelet" }},
	{"CDI dir", []string{"cdiDir=/etc/cdi"}, func(o *deploy.NICOptions) { o.CDIDir = "/etc/cdi" }},
	{"host root", []string{"hostRoot=/var/lib/drakit/node-1"}, func(o *deploy.NICOptions) { o.HostRoot = "/var/lib/drakit/node-1" }},
	{"VFs per PF", []string{"vfsPerPF=0"}, func(o *deploy.NICOptions) { o.VFsPerPF = 0 }},
	{"most VFs per PF", []string{"vfsPerPF=256"}, func(o *deploy.NICOptions) { o.VFsPerPF = 256 }},
	{"apiserver", []string{"apiServer.host=10.0.0.1,apiServer.port=443"},
		func(o *deploy.NICOptions) { o.APIServerHost, o.APIServerPort = "10.0.0.1", 443 }},
	{"kubelet's apiserver", []string{"apiServer.host=,apiServer.port=0"},
		func(o *deploy.NICOptions) { o.APIServerHost, o.APIServerPort = "", 0 }},
}

// TestNICChartIsReferenceDeploy renders the NIC chart for each case and
// compares its objects with reference/deploy's NICObjects for the same
// options.
func TestNICChartIsReferenceDeploy(t *testing.T) {
	for _, tc := range nicCases {
		t.Run(tc.name, func(t *testing.T) {
			opts := deploy.DefaultNICOptions()
			tc.opts(&opts)
			m, err := deploy.NICObjects(opts)
			if err != nil {
				t.Fatalf("reference/deploy objects: %v", err)
			}
			got := renderObjects(t, nicChart, tc.set...)
			if err := compare(m.List(), got); err != nil {
				t.Errorf("chart with %q against reference/deploy with %+v:\n%v", tc.set, opts, err)
			}
			// 8 objects and the VF class.
			if len(got) != 9 {
				t.Errorf("chart rendered %d objects, want 9", len(got))
			}
		})
	}
}

// TestNICChartRefusesWhatDeployRefuses: values that reference/deploy's
// NICOptions.Validate refuses fail to render.
func TestNICChartRefusesWhatDeployRefuses(t *testing.T) {
	for _, tc := range []struct {
		set  string
		opts func(*deploy.NICOptions)
	}{
		{"driverName=NIC_drakit", func(o *deploy.NICOptions) { o.DriverName = "NIC_drakit" }},
		{"vfsPerPF=257", func(o *deploy.NICOptions) { o.VFsPerPF = 257 }},
		{"vfsPerPF=-1", func(o *deploy.NICOptions) { o.VFsPerPF = -1 }},
		{"hostRoot=emulator", func(o *deploy.NICOptions) { o.HostRoot = "emulator" }},
		{"cdiDir=/etc/cdi/", func(o *deploy.NICOptions) { o.CDIDir = "/etc/cdi/" }},
		{"apiServer.host=,apiServer.port=6443", func(o *deploy.NICOptions) { o.APIServerHost = "" }},
	} {
		t.Run(tc.set, func(t *testing.T) {
			opts := deploy.DefaultNICOptions()
			tc.opts(&opts)
			if err := opts.Validate(); err == nil {
				t.Fatalf("reference/deploy accepts %+v", opts)
			}
			_, err := render(nicChart, tc.set)
			if err == nil {
				t.Fatalf("chart renders with %s", tc.set)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// cpuCases are value sets of the CPU chart and the reference/deploy
// options they stand for: the defaults and each option.
var cpuCases = []struct {
	name string
	set  []string
	opts func(*deploy.CPUOptions)
}{
	{"defaults", nil, func(*deploy.CPUOptions) {}},
	{"driver name", []string{"driverName=cpu.example.com"}, func(o *deploy.CPUOptions) { o.DriverName = "cpu.example.com" }},
	{"image", []string{"image.repository=registry.example/drakit/driver,image.tag=v1.2.3"},
		func(o *deploy.CPUOptions) { o.Image = "registry.example/drakit/driver:v1.2.3" }},
	{"kubelet root dir", []string{"kubeletRootDir=/var/lib/k8s/kubelet"}, func(o *deploy.CPUOptions) { o.KubeletRootDir = "/var/lib/k8s/kubelet" }},
	{"CDI dir", []string{"cdiDir=/etc/cdi"}, func(o *deploy.CPUOptions) { o.CDIDir = "/etc/cdi" }},
	{"host root", []string{"hostRoot=/var/lib/drakit/node-1"}, func(o *deploy.CPUOptions) { o.HostRoot = "/var/lib/drakit/node-1" }},
	{"state dir", []string{"stateDir=/var/lib/cpu-driver-state"}, func(o *deploy.CPUOptions) { o.StateDir = "/var/lib/cpu-driver-state" }},
	{"apiserver", []string{"apiServer.host=10.0.0.1,apiServer.port=443"},
		func(o *deploy.CPUOptions) { o.APIServerHost, o.APIServerPort = "10.0.0.1", 443 }},
	{"kubelet's apiserver", []string{"apiServer.host=,apiServer.port=0"},
		func(o *deploy.CPUOptions) { o.APIServerHost, o.APIServerPort = "", 0 }},
}

// TestCPUChartIsReferenceDeploy renders the CPU chart for each case and
// compares its objects with reference/deploy's CPUObjects for the same
// options.
func TestCPUChartIsReferenceDeploy(t *testing.T) {
	for _, tc := range cpuCases {
		t.Run(tc.name, func(t *testing.T) {
			opts := deploy.DefaultCPUOptions()
			tc.opts(&opts)
			m, err := deploy.CPUObjects(opts)
			if err != nil {
				t.Fatalf("reference/deploy objects: %v", err)
			}
			got := renderObjects(t, cpuChart, tc.set...)
			if err := compare(m.List(), got); err != nil {
				t.Errorf("chart with %q against reference/deploy with %+v:\n%v", tc.set, opts, err)
			}
			if len(got) != 8 {
				t.Errorf("chart rendered %d objects, want 8", len(got))
			}
		})
	}
}
