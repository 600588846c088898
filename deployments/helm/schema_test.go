package helm_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestChartsRefuseUnknownValues: every chart's schema is strict, so a
// misspelt value, at the top level or nested, fails to render with an
// error naming the value and where it is, rather than being ignored.
func TestChartsRefuseUnknownValues(t *testing.T) {
	for _, tc := range []struct {
		chart, set string
		// at is the object holding the unknown value ("" the top level)
		// and name the value's own name, as the schema error says them.
		at, name string
	}{
		{gpuChart, "driverNmae=gpu.example.com", "", "driverNmae"},
		{gpuChart, "bindingConditions=true", "", "bindingConditions"},
		{gpuChart, "gpu.bindingCondition=true", "/gpu", "bindingCondition"},
		{gpuChart, "gpu.imex.channel=4", "/gpu/imex", "channel"},
		{gpuChart, "gpu.imex.replicas=2", "/gpu/imex", "replicas"},
		{gpuChart, "apiServer.hostname=10.0.0.1", "/apiServer", "hostname"},
		{nicChart, "nic.vfsPerPf=8", "/nic", "vfsPerPf"},
		{nicChart, "image.tags=v2", "/image", "tags"},
		{cpuChart, "stateDirectory=/srv/cpu", "", "stateDirectory"},
		{cpuChart, "namespace.nmae=drakit", "/namespace", "nmae"},
		{plainChart, "plain.devicess=3", "/plain", "devicess"},
		{plainChart, "apiServer.hostname=10.0.0.1", "/apiServer", "hostname"},
		{plainChart, "image.name=other", "/image", "name"},
		{tpuChart, "tpu.shape=full", "/tpu", "shape"},
		{tpuChart, "tpu.controller.replicas=2", "/tpu/controller", "replicas"},
		{tpuChart, "namespace.labels.a=b", "/namespace", "labels"},
		{gpuChart, "tolerations[0].opertor=Exists", "/tolerations/0", "opertor"},
	} {
		t.Run(tc.chart+" "+tc.set, func(t *testing.T) {
			_, err := render(tc.chart, tc.set)
			if err == nil {
				t.Fatalf("chart renders with %s", tc.set)
			}
			want := fmt.Sprintf("at '%s': additional properties '%s' not allowed", tc.at, tc.name)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error does not say %q: %v", want, err)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// TestChartSchemasAreStrict: in the chart's values.schema.json each
// object (the values, each group of values, each definition) says what
// else it allows: false, or a schema for a map's entries (nodeSelector's
// labels). A new object without it would let misspelt values through.
func TestChartSchemasAreStrict(t *testing.T) {
	for _, chart := range []string{chartDir} {
		data, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		var schema any
		if err := json.Unmarshal(data, &schema); err != nil {
			t.Fatalf("decode %s schema: %v", chart, err)
		}
		objects := 0
		walkSchema(schema, "", func(path string, s map[string]any) {
			if s["type"] != "object" {
				return
			}
			objects++
			if _, ok := s["additionalProperties"]; !ok {
				t.Errorf("%s schema: object %s has no additionalProperties", chart, path)
			}
		})
		// The values, namespace, image, apiServer, nodeSelector and each
		// kind's own values.
		if objects < 10 {
			t.Errorf("%s schema: %d objects, want at least 10", chart, objects)
		}
	}
}

// TestChartsTakeEveryTolerationField: the strict toleration schema
// declares every field of a core/v1 Toleration, and each reaches the
// DaemonSet's pods.
func TestChartsTakeEveryTolerationField(t *testing.T) {
	set := "tolerations[0].key=drakit.dev/gpu,tolerations[0].operator=Equal,tolerations[0].value=a100," +
		"tolerations[0].effect=NoExecute,tolerations[0].tolerationSeconds=30"
	want := []corev1.Toleration{{
		Key: "drakit.dev/gpu", Operator: corev1.TolerationOpEqual, Value: "a100",
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30),
	}}
	for _, chart := range kinds {
		t.Run(chart, func(t *testing.T) {
			daemonSets := 0
			for _, obj := range renderObjects(t, chart, set) {
				ds, ok := obj.(*appsv1.DaemonSet)
				if !ok {
					continue
				}
				daemonSets++
				if diff := cmp.Diff(want, ds.Spec.Template.Spec.Tolerations); diff != "" {
					t.Errorf("DaemonSet %s tolerations (-want +got):\n%s", ds.Name, diff)
				}
			}
			if daemonSets != 1 {
				t.Errorf("chart rendered %d DaemonSets, want 1", daemonSets)
			}
		})
	}
}

// walkSchema calls f with every JSON object in the schema s and its path
// (JSON pointer), s first.
func walkSchema(s any, path string, f func(path string, s map[string]any)) {
	switch v := s.(type) {
	case map[string]any:
		f(path, v)
		for k, e := range v {
			walkSchema(e, path+"/"+k, f)
		}
	case []any:
		for i, e := range v {
			walkSchema(e, fmt.Sprintf("%s/%d", path, i), f)
		}
	}
}

// TestChartsRefuseUncleanHostPaths: every value of every chart whose
// schema is a host path (a $ref to #/definitions/hostPath, alone or beside
// "") is refused by the schema, naming the value, when it is not a clean
// absolute path, as reference/deploy refuses it; a clean one renders.
func TestChartsRefuseUncleanHostPaths(t *testing.T) {
	const hostPathRef = "#/definitions/hostPath"
	for _, chart := range kinds {
		data, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(data, &schema); err != nil {
			t.Fatalf("decode %s schema: %v", chart, err)
		}
		var values []string
		for name, s := range schema.Properties {
			if strings.Contains(string(s), `"`+hostPathRef+`"`) {
				values = append(values, name)
			}
		}
		if len(values) < 2 {
			t.Errorf("%s schema: host path values %v, want at least kubeletRootDir and cdiDir", chart, values)
		}
		for _, value := range values {
			for _, p := range []string{"var/lib/drakit", "/var/lib/../etc", "/var/lib/drakit/", "/var//lib/drakit", "/var/lib/./drakit", "/var/lib/.."} {
				t.Run(chart+" "+value+"="+p, func(t *testing.T) {
					_, err := render(chart, value+"="+p)
					if err == nil {
						t.Fatalf("chart renders with %s=%s", value, p)
					}
					if want := "at '/" + value + "'"; !strings.Contains(err.Error(), want) {
						t.Errorf("error is not the schema's on %s: %v", value, err)
					}
				})
			}
			clean := "/var/lib/.drakit..probe"
			if value == "registrarDir" { // below the default kubeletRootDir
				clean = "/var/lib/kubelet/.drakit..probe"
			}
			if _, err := render(chart, value+"="+clean); err != nil {
				t.Errorf("%s with %s=%s: %v", chart, value, clean, err)
			}
		}
	}
}
