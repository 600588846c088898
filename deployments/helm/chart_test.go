package helm_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// chartDir is the reference drivers' one chart.
const chartDir = "drakit-driver"

// The chart's kinds (its value kind).
const (
	gpuChart   = "gpu"
	nicChart   = "nic"
	cpuChart   = "cpu"
	tpuChart   = "tpu"
	plainChart = "plain"
)

// kinds are every kind of the chart.
var kinds = []string{gpuChart, nicChart, cpuChart, tpuChart, plainChart}

// releaseOf names, by kind, the release the tests install, so that the
// chart's names are reference/deploy's (deploy.Name, deploy.NICName,
// deploy.CPUName, deploy.TPUName, deploy.PlainName).
var releaseOf = map[string]string{
	gpuChart: "drakit-driver", nicChart: "drakit-nic-driver", cpuChart: "drakit-cpu-driver", tpuChart: "drakit-tpu-driver",
	plainChart: "drakit-plain-driver",
}

// helmLabels are the labels only the chart adds (Helm's conventions); the
// comparison leaves them out, and every rendered object must carry them.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}

// kubeVersion is the cluster version the chart is rendered for.
var kubeVersion = &common.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}

// render installs the chart of kind client-only (helm install
// --dry-run=client, what helm template does) as a release named
// releaseOf[kind], in namespace default, with kind=<kind> and the values
// set (each as --set would take it) and returns the manifest.
func render(kind string, set ...string) (string, error) {
	return renderRelease(kind, releaseOf[kind], set...)
}

// renderRelease is render as the release named release.
func renderRelease(kind, release string, set ...string) (string, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return "", fmt.Errorf("load chart %s: %w", chartDir, err)
	}
	vals := map[string]any{}
	for _, s := range append([]string{"kind=" + kind}, set...) {
		if err := strvals.ParseInto(s, vals); err != nil {
			return "", fmt.Errorf("parse --set %s: %w", s, err)
		}
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
	install := action.NewInstall(cfg)
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = release
	install.Namespace = "default"
	install.KubeVersion = kubeVersion
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return "", fmt.Errorf("render chart %s (kind %s) with %q: %w", chartDir, kind, set, err)
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
// of got that want lacks. It leaves out the Helm labels of want (deploy
// renders the chart as a release of its own, managed by drakit).
func compare(want, got []runtime.Object) error {
	for _, obj := range want {
		_ = dropHelmLabels(obj)
	}
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

// renderObjects renders the chart of kind with set and returns its objects
// without the Helm labels (each must have them).
func renderObjects(t *testing.T, kind string, set ...string) []runtime.Object {
	t.Helper()
	return renderReleaseObjects(t, kind, releaseOf[kind], set...)
}

// renderReleaseObjects is renderObjects as the release named release.
func renderReleaseObjects(t *testing.T, kind, release string, set ...string) []runtime.Object {
	t.Helper()
	manifest, err := renderRelease(kind, release, set...)
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

// TestChartsLint: helm lint finds nothing worse than information (such
// as the chart having no icon), for every kind.
func TestChartsLint(t *testing.T) {
	for _, kind := range kinds {
		linter := lint.RunAll(chartDir, map[string]any{"kind": kind}, "default", lint.WithKubeVersion(kubeVersion))
		for _, msg := range linter.Messages {
			if msg.Severity > support.InfoSev {
				t.Errorf("helm lint %s with kind %s: %v", chartDir, kind, msg)
			}
		}
	}
}

// TestCompareReportsDrift: the comparison names the object and the field
// that differ, and objects only one side has.
func TestCompareReportsDrift(t *testing.T) {
	m, err := deploy.Objects(deploy.DefaultOptions(deploy.KindGPU))
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
