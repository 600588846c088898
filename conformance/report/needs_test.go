package report

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseNeeds(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tags    []string
		want    Needs
		wantErr string
	}{
		"none":         {tags: []string{"@kep-4381", "@core"}},
		"gate and API": {tags: []string{"@needs-api-v1alpha3.resource.k8s.io", "@kep-5677", "@needs-gate-DRAResourcePoolStatus"}, want: Needs{Gates: []string{"DRAResourcePoolStatus"}, APIs: []string{"resource.k8s.io/v1alpha3"}}},
		"inherited twice": {tags: []string{"@needs-gate-GenericWorkload", "@needs-gate-GenericWorkload", "@needs-api-v1beta1.scheduling.k8s.io"},
			want: Needs{Gates: []string{"GenericWorkload"}, APIs: []string{"scheduling.k8s.io/v1beta1"}}},
		"GA version":           {tags: []string{"@needs-api-v1.resource.k8s.io"}, want: Needs{APIs: []string{"resource.k8s.io/v1"}}},
		"lower-case gate":      {tags: []string{"@needs-gate-draListTypeAttributes"}, wantErr: `tag @needs-gate-draListTypeAttributes: "draListTypeAttributes" is not a feature gate name`},
		"empty gate":           {tags: []string{"@needs-gate-"}, wantErr: `"" is not a feature gate name`},
		"no group":             {tags: []string{"@needs-api-v1alpha3"}, wantErr: `tag @needs-api-v1alpha3: "v1alpha3" is not an API version as <version>.<group>`},
		"a core group":         {tags: []string{"@needs-api-v1.core"}, wantErr: `"v1.core" is not an API version`},
		"no version":           {tags: []string{"@needs-api-resource.k8s.io"}, wantErr: `"resource.k8s.io" is not an API version`},
		"not a version":        {tags: []string{"@needs-api-alpha.resource.k8s.io"}, wantErr: `"alpha.resource.k8s.io" is not an API version`},
		"group/version":        {tags: []string{"@needs-api-resource.k8s.io/v1alpha3"}, wantErr: `"resource.k8s.io/v1alpha3" is not an API version as <version>.<group>`},
		"unknown kind of need": {tags: []string{"@needs-version-1.37"}, wantErr: "tag @needs-version-1.37: eligibility tags start with @needs-gate- or @needs-api-"},
	}
	for name, tc := range tests {
		got, err := ParseNeeds(tc.tags)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: ParseNeeds(%q) = %v, want the error %q", name, tc.tags, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: ParseNeeds(%q): %v", name, tc.tags, err)
		case tc.wantErr == "" && !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s: ParseNeeds(%q) = %+v, want %+v", name, tc.tags, got, tc.want)
		}
	}
}

func TestNeedsString(t *testing.T) {
	t.Parallel()
	tests := map[string]Needs{
		"": {},
		"feature gate GenericWorkload, feature gate DRAWorkloadResourceClaims, API scheduling.k8s.io/v1beta1": {
			Gates: []string{"GenericWorkload", "DRAWorkloadResourceClaims"}, APIs: []string{"scheduling.k8s.io/v1beta1"}},
		"API resource.k8s.io/v1alpha3": {APIs: []string{"resource.k8s.io/v1alpha3"}},
	}
	for want, n := range tests {
		if got := n.String(); got != want {
			t.Errorf("%+v.String() = %q, want %q", n, got, want)
		}
	}
}
