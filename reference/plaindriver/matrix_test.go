package plaindriver

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"drakit.dev/drakit/conformance/declaration"
)

// matrixDir holds the styles' declarations.
const matrixDir = "../../docs/examples/matrix"

// TestMatrixCoversEveryDefectAndStyle: every defect is a row once, with a
// tag filter and a finding, on a style it can have; every style is a
// correct row; at least 20 defects and 6 styles; names are unique and fit.
func TestMatrixCoversEveryDefectAndStyle(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	defects := map[Defect]int{}
	styles := map[Style]bool{}
	correct := 0
	for _, v := range Matrix() {
		if names[v.Name] {
			t.Errorf("variant %s twice", v.Name)
		}
		names[v.Name] = true
		if err := ValidateVariantName(v.Name); err != nil {
			t.Error(err)
		}
		if msgs := validation.IsDNS1123Subdomain(VariantDriverName(v.Name)); len(msgs) > 0 {
			t.Errorf("variant %s: driver name %v", v.Name, msgs)
		}
		if v.Tags == "" {
			t.Errorf("variant %s has no tag filter", v.Name)
		}
		if err := v.Defect.ValidateStyle(v.Style); err != nil {
			t.Errorf("variant %s: %v", v.Name, err)
		}
		if err := ValidateDevices(DefaultDevices, v.Style, v.Defect); err != nil {
			t.Errorf("variant %s: %v", v.Name, err)
		}
		if v.Defect == "" {
			correct++
			styles[v.Style] = true
			if v.Finding != "" {
				t.Errorf("style %s expects a finding", v.Name)
			}
			continue
		}
		defects[v.Defect]++
		if v.Finding == "" {
			t.Errorf("defect %s has no expected finding", v.Name)
		}
	}
	for _, d := range Defects() {
		if defects[d] != 1 {
			t.Errorf("defect %s is in %d rows, want 1", d, defects[d])
		}
	}
	for _, s := range Styles() {
		if !styles[s] {
			t.Errorf("style %s has no correct row", s)
		}
	}
	if len(defects) < 20 || correct < 6 {
		t.Errorf("%d defects and %d correct styles, want at least 20 and 6", len(defects), correct)
	}
}

// TestMatrixDeclarations: each variant's declaration, renamed from its
// style's, is valid and names the variant's driver, pods and the classes
// its deployment creates, one kind per class.
func TestMatrixDeclarations(t *testing.T) {
	t.Parallel()
	for _, v := range Matrix() {
		data, err := os.ReadFile(filepath.Join(matrixDir, v.DeclarationFile()))
		if err != nil {
			t.Fatal(err)
		}
		d, err := declaration.Parse(v.Declaration(data), v.Name)
		if err != nil {
			t.Errorf("variant %s: %v", v.Name, err)
			continue
		}
		driver := VariantDriverName(v.Name)
		if d.Driver.Name != driver {
			t.Errorf("variant %s: declaration names driver %s, want %s", v.Name, d.Driver.Name, driver)
		}
		if d.Driver.Pods == nil || d.Driver.Pods.Namespace != "drakit-plain-"+v.Name || d.Driver.Pods.Selector != "app.kubernetes.io/name=drakit-plain-"+v.Name {
			t.Errorf("variant %s: declaration's pods %+v", v.Name, d.Driver.Pods)
		}
		var want, got []string
		for _, c := range DeviceClasses(driver, v.Style) {
			want = append(want, c.Name)
		}
		for _, k := range d.DeviceKinds {
			got = append(got, k.DeviceClass)
		}
		if !slices.Equal(want, got) {
			t.Errorf("variant %s: declaration's classes %v, the deployment's %v", v.Name, got, want)
		}
	}
}
