package deploy

import (
	"fmt"
	"strings"
	"testing"

	celgo "github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/utils/ptr"
)

// expression is a CEL expression of the policy with the type it must have:
// a validation or match condition (bool), a message expression (string) or
// a variable (any).
type expression struct {
	name, expr string
	types      []*celgo.Type
}

func (e *expression) GetExpression() string      { return e.expr }
func (e *expression) ReturnTypes() []*celgo.Type { return e.types }
func (e *expression) GetName() string            { return e.name }
func condition(expr string) *expression {
	return &expression{expr: expr, types: []*celgo.Type{celgo.BoolType}}
}
func messageExpression(expr string) *expression {
	return &expression{expr: expr, types: []*celgo.Type{celgo.StringType}}
}
func variable(v admissionregistrationv1.Variable) *expression {
	return &expression{name: v.Name, expr: v.Expression, types: []*celgo.Type{celgo.AnyType, celgo.DynType}}
}

// compiledPolicy is a ValidatingAdmissionPolicy compiled as the apiserver
// compiles and evaluates one (k8s.io/apiserver's admission CEL compiler and
// its policy/validating plugin, which this module cannot import).
type compiledPolicy struct {
	policy      *admissionregistrationv1.ValidatingAdmissionPolicy
	matcher     matchconditions.Matcher
	validations plugincel.ConditionEvaluator
	messages    plugincel.ConditionEvaluator
}

// compilePolicy compiles every expression as the apiserver validates a new
// policy: variables and validations with the composited compiler (they may
// use variables), match conditions with the stateless one, all in the
// environment for new expressions. Compilation errors fail the test.
func compilePolicy(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy) *compiledPolicy {
	t.Helper()
	env := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	decls := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	compiler, err := plugincel.NewCompositedCompiler(env)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, res plugincel.CompilationResult) {
		t.Helper()
		if res.Error != nil {
			t.Errorf("policy %s: %s %q does not compile: %v", p.Name, what, res.ExpressionAccessor.GetExpression(), res.Error)
		}
	}
	for _, v := range p.Spec.Variables {
		check("variable "+v.Name, compiler.CompileAndStoreVariable(variable(v), decls, environment.NewExpressions))
	}
	stateless := plugincel.NewCompiler(env)
	var match []plugincel.ExpressionAccessor
	for i := range p.Spec.MatchConditions {
		mc := (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
		check("match condition "+mc.Name, stateless.CompileCELExpression(mc, decls, environment.NewExpressions))
		match = append(match, mc)
	}
	var validations, messages []plugincel.ExpressionAccessor
	for i, v := range p.Spec.Validations {
		validations = append(validations, condition(v.Expression))
		check(fmt.Sprintf("validation %d", i), compiler.CompileCELExpression(condition(v.Expression), decls, environment.NewExpressions))
		if v.MessageExpression == "" {
			messages = append(messages, nil)
			continue
		}
		messages = append(messages, messageExpression(v.MessageExpression))
		check(fmt.Sprintf("message expression %d", i), compiler.CompileCELExpression(messageExpression(v.MessageExpression),
			plugincel.OptionalVariableDeclarations{}, environment.NewExpressions))
	}
	if t.Failed() {
		t.FailNow()
	}
	return &compiledPolicy{
		policy: p,
		matcher: matchconditions.NewMatcher(compiler.CompileCondition(match, decls, environment.StoredExpressions),
			p.Spec.FailurePolicy, "policy", "validate", p.Name),
		validations: compiler.CompileCondition(validations, decls, environment.StoredExpressions),
		messages:    compiler.CompileCondition(messages, plugincel.OptionalVariableDeclarations{}, environment.StoredExpressions),
	}
}

// admit evaluates the policy for one ResourceSlice request (obj nil for a
// DELETE, old nil for a CREATE) as the apiserver would: the messages of the
// validations that deny it, none when it is admitted or not matched.
func (c *compiledPolicy) admit(t *testing.T, op admission.Operation, obj, old *resourceapi.ResourceSlice, u user.Info) []string {
	t.Helper()
	ctx := t.Context()
	var newObj, oldObj runtime.Object
	name := ""
	if obj != nil {
		newObj, name = obj, obj.Name
	}
	if old != nil {
		oldObj, name = old, old.Name
	}
	gvk := resourceapi.SchemeGroupVersion.WithKind("ResourceSlice")
	gvr := resourceapi.SchemeGroupVersion.WithResource("resourceslices")
	attr := admission.NewAttributesRecord(newObj, oldObj, gvk, "", name, gvr, "", op, nil, false, u)
	versioned := &admission.VersionedAttributes{
		Attributes:         attr,
		VersionedKind:      gvk,
		VersionedObject:    admission.NewLazyObject(newObj),
		VersionedOldObject: admission.NewLazyObject(oldObj),
	}
	if m := c.matcher.Match(ctx, versioned, nil, nil); m.Error != nil {
		t.Fatalf("match conditions: %v", m.Error)
	} else if !m.Matches {
		return nil
	}
	request := plugincel.CreateAdmissionRequest(attr, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
	results, budget, err := c.validations.ForInput(ctx, versioned, request, plugincel.OptionalVariableBindings{},
		plugincel.CreateNamespaceObject(nil), celconfig.RuntimeCELCostBudget)
	if err != nil {
		t.Fatalf("evaluate validations: %v", err)
	}
	messages, _, err := c.messages.ForInput(ctx, versioned, request, plugincel.OptionalVariableBindings{},
		plugincel.CreateNamespaceObject(nil), budget)
	if err != nil {
		t.Fatalf("evaluate message expressions: %v", err)
	}
	var denied []string
	for i, r := range results {
		if r.Error != nil {
			t.Fatalf("validation %d %q: %v", i, r.ExpressionAccessor.GetExpression(), r.Error)
		}
		if r.EvalResult == celtypes.True {
			continue
		}
		v := c.policy.Spec.Validations[i]
		msg := v.Message
		if v.MessageExpression != "" {
			if messages[i].Error != nil {
				t.Fatalf("message expression %d: %v", i, messages[i].Error)
			}
			msg = messages[i].EvalResult.Value().(string)
		}
		if strings.Contains(msg, "\n") || ptr.Deref(v.Reason, "") != metav1.StatusReasonForbidden {
			t.Errorf("validation %d: message %q must be one line and its reason Forbidden, not %q", i, msg, ptr.Deref(v.Reason, ""))
		}
		denied = append(denied, msg)
	}
	return denied
}

func slice(driver, node string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver + "-abcde"},
		Spec:       resourceapi.ResourceSliceSpec{Driver: driver, Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}},
	}
	if node != "" {
		s.Spec.NodeName = &node
	} else {
		s.Spec.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"sim-1"}}},
		}}}
	}
	return s
}

// driverOn is the driver's service account as a pod on node authenticates:
// with the node name of its pod-bound token (no node: a token not bound to
// a pod).
func driverOn(node string) user.Info { return serviceAccountOn(gpuWorkload, node) }

// serviceAccountOn is driverOn for the service account of w.
func serviceAccountOn(w workload, node string) user.Info {
	u := &user.DefaultInfo{
		Name:   serviceaccount.MakeUsername(w.namespace, w.name),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + w.namespace, "system:authenticated"},
		Extra:  map[string][]string{},
	}
	if node != "" {
		u.Extra[serviceaccount.NodeNameKey] = []string{node}
	}
	return u
}

// TestPolicyLimitsDriverToItsNode evaluates the rendered policy as the
// apiserver does: the driver's service account may create, update and
// delete only its driver's slices of its own node; other users, the kubelet
// and drakit driver simulate (admin) are not matched.
func TestPolicyLimitsDriverToItsNode(t *testing.T) {
	t.Parallel()
	m, err := Objects(DefaultOptions(KindGPU))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.PolicyBinding.Spec.PolicyName, m.Policy.Name; got != want {
		t.Errorf("binding %s binds policy %s, want %s", m.PolicyBinding.Name, got, want)
	}
	if diff := cmp.Diff([]admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, m.PolicyBinding.Spec.ValidationActions); diff != "" {
		t.Errorf("binding validation actions (-want +got):\n%s", diff)
	}
	if m.PolicyBinding.Spec.MatchResources != nil || m.PolicyBinding.Spec.ParamRef != nil {
		t.Errorf("binding narrows the policy or has params: %+v", m.PolicyBinding.Spec)
	}
	if got := ptr.Deref(m.Policy.Spec.FailurePolicy, ""); got != admissionregistrationv1.Fail {
		t.Errorf("failure policy %s, want Fail", got)
	}
	p := compilePolicy(t, m.Policy)

	const driver = "gpu.drakit.dev"
	admin := &user.DefaultInfo{Name: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}
	kubelet := &user.DefaultInfo{Name: "system:node:node-a", Groups: []string{"system:nodes", "system:authenticated"}}
	otherSA := &user.DefaultInfo{Name: serviceaccount.MakeUsername("other", Name),
		Extra: map[string][]string{serviceaccount.NodeNameKey: {"node-a"}}}
	const (
		otherNode  = "the driver on node node-a may not modify ResourceSlices of node node-b"
		noNodeName = "the driver on node node-a may not modify ResourceSlices without a node name"
		noToken    = "the driver's service account has no node in its token: it must run in a pod on a node, with a pod-bound service account token"
	)
	for _, tc := range []struct {
		name     string
		op       admission.Operation
		obj, old *resourceapi.ResourceSlice
		user     user.Info
		want     []string
	}{
		{"create-own-node", admission.Create, slice(driver, "node-a"), nil, driverOn("node-a"), nil},
		{"update-own-node", admission.Update, slice(driver, "node-a"), slice(driver, "node-a"), driverOn("node-a"), nil},
		{"delete-own-node", admission.Delete, nil, slice(driver, "node-a"), driverOn("node-a"), nil},
		{"create-other-node", admission.Create, slice(driver, "node-b"), nil, driverOn("node-a"), []string{otherNode}},
		{"update-other-node", admission.Update, slice(driver, "node-b"), slice(driver, "node-b"), driverOn("node-a"), []string{otherNode}},
		{"delete-other-node", admission.Delete, nil, slice(driver, "node-b"), driverOn("node-a"), []string{otherNode}},
		{"create-node-selector", admission.Create, slice(driver, ""), nil, driverOn("node-a"), []string{noNodeName}},
		{"delete-node-selector", admission.Delete, nil, slice(driver, ""), driverOn("node-a"), []string{noNodeName}},
		{"create-other-driver", admission.Create, slice("nic.example.com", "node-a"), nil, driverOn("node-a"), []string{
			"the driver's service account may modify only ResourceSlices of driver gpu.drakit.dev, not of nic.example.com"}},
		{"create-without-node-in-token", admission.Create, slice(driver, "node-a"), nil, driverOn(""), []string{
			noToken, "the driver on node  may not modify ResourceSlices of node node-a"}},
		{"create-with-other-extra-only", admission.Create, slice(driver, "node-a"), nil, &user.DefaultInfo{
			Name: serviceaccount.MakeUsername(Namespace, Name), Extra: map[string][]string{serviceaccount.PodNameKey: {"drakit-driver-abcde"}},
		}, []string{noToken, "the driver on node  may not modify ResourceSlices of node node-a"}},
		{"simulate-as-admin", admission.Create, slice(driver, ""), nil, admin, nil},
		{"admin-other-node", admission.Delete, nil, slice(driver, "node-b"), admin, nil},
		{"kubelet-wipes-slices", admission.Delete, nil, slice(driver, "node-a"), kubelet, nil},
		{"same-name-other-namespace", admission.Create, slice(driver, "node-b"), nil, otherSA, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, p.admit(t, tc.op, tc.obj, tc.old, tc.user)); diff != "" {
				t.Errorf("denials (-want +got):\n%s", diff)
			}
		})
	}

	// The driver name is substituted: a renamed driver's service account
	// may write its own slices, not the default driver's.
	opts := DefaultOptions(KindGPU)
	opts.DriverName = "gpu.example.com"
	renamed, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	rp := compilePolicy(t, renamed.Policy)
	if got := rp.admit(t, admission.Create, slice("gpu.example.com", "node-a"), nil, driverOn("node-a")); got != nil {
		t.Errorf("renamed driver creating its own slice: denied %q", got)
	}
	if got := rp.admit(t, admission.Create, slice(driver, "node-a"), nil, driverOn("node-a")); len(got) != 1 {
		t.Errorf("renamed driver creating a slice of %s: denials %q, want one", driver, got)
	}
}

// TestPolicyMatchesTheDriversServiceAccount: the match condition names the
// service account the DaemonSet runs as, and the policy matches every
// write of ResourceSlices in every version.
func TestPolicyMatchesTheDriversServiceAccount(t *testing.T) {
	t.Parallel()
	m, err := Objects(DefaultOptions(KindGPU))
	if err != nil {
		t.Fatal(err)
	}
	sa := m.DaemonSet.Spec.Template.Spec.ServiceAccountName
	if sa != m.ServiceAccount.Name || m.ServiceAccount.Namespace != m.DaemonSet.Namespace {
		t.Fatalf("DaemonSet runs as %s/%s, the manifests create service account %s/%s",
			m.DaemonSet.Namespace, sa, m.ServiceAccount.Namespace, m.ServiceAccount.Name)
	}
	want := []admissionregistrationv1.MatchCondition{{
		Name:       "driver-service-account",
		Expression: fmt.Sprintf("request.userInfo.username == %q", serviceaccount.MakeUsername(m.DaemonSet.Namespace, sa)),
	}}
	if diff := cmp.Diff(want, m.Policy.Spec.MatchConditions); diff != "" {
		t.Errorf("match conditions (-want +got):\n%s", diff)
	}
	mc := m.Policy.Spec.MatchConstraints
	if mc == nil || ptr.Deref(mc.MatchPolicy, "") != admissionregistrationv1.Equivalent || len(mc.ResourceRules) != 1 {
		t.Fatalf("match constraints %+v: want one rule, matchPolicy Equivalent", mc)
	}
	rule := mc.ResourceRules[0].RuleWithOperations
	wantRule := admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{resourceapi.GroupName}, APIVersions: []string{"v1"}, Resources: []string{"resourceslices"},
		},
	}
	if diff := cmp.Diff(wantRule, rule); diff != "" {
		t.Errorf("resource rule (-want +got):\n%s", diff)
	}
}
