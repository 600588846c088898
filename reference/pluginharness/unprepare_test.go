package pluginharness_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/reference/pluginharness"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// TestUnprepare: unprepare undoes the driver's prepare, removes the spec
// and forgets the claim, also when asked again.
func TestUnprepare(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	if r := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-0"))); r.Err != nil {
		t.Fatalf("prepare: %v", r.Err)
	}
	for i := range 2 {
		if err := harnesstest.Unprepare(t, p, uidA)[uidA]; err != nil {
			t.Fatalf("unprepare #%d: %v", i+1, err)
		}
		if files := harnesstest.DirState(t, e.cfg.CDIDir); len(files) != 0 {
			t.Errorf("after unprepare #%d the CDI dir still has %v", i+1, files)
		}
		if claims := p.Prepared(); len(claims) != 0 {
			t.Errorf("after unprepare #%d the plugin still remembers %v", i+1, claims)
		}
		if hw := e.drv.set(); len(hw) != 0 {
			t.Errorf("after unprepare #%d the hardware still has %v", i+1, hw)
		}
	}
	if n := e.drv.count("Unprepare"); n != 1 {
		t.Errorf("Driver.Unprepare called %d times, want once (the second unprepare knows no claim)", n)
	}
	// The checkpoint on disk agrees.
	if claims := e.plugin(t).Prepared(); len(claims) != 0 {
		t.Errorf("checkpoint still lists %v", claims)
	}
}

func TestUnprepareUnknownClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	if r := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-0"))); r.Err != nil {
		t.Fatalf("prepare: %v", r.Err)
	}
	if err := harnesstest.Unprepare(t, p, uidB)[uidB]; err != nil {
		t.Errorf("unprepare of an unknown claim: %v", err)
	}
	if _, err := os.Stat(e.specPath(uidA)); err != nil {
		t.Errorf("unprepare of another claim touched claim A's spec: %v", err)
	}
	if _, ok := p.Prepared()[uidA]; !ok {
		t.Errorf("unprepare of another claim dropped claim A")
	}
	if n := e.drv.count("Unprepare"); n != 0 {
		t.Errorf("Driver.Unprepare called %d times for an unknown claim", n)
	}
}

// TestUnprepareRemovesOrphanSpec covers a crash after writing the spec and
// before checkpointing it: the spec goes by its name.
func TestUnprepareRemovesOrphanSpec(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	if err := os.WriteFile(e.specPath(uidA), []byte(`{"cdiVersion":"0.3.0","kind":"k8s.test.drakit.dev/claim","devices":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := harnesstest.Unprepare(t, p, uidA)[uidA]; err != nil {
		t.Fatalf("unprepare: %v", err)
	}
	if _, err := os.Stat(e.specPath(uidA)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan spec still exists (stat: %v)", err)
	}
}

// TestUnprepareRefusesBadUID: a UID that could lead out of the CDI
// directory is refused, and no file outside is touched.
func TestUnprepareRefusesBadUID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	victim := filepath.Join(filepath.Dir(e.cfg.CDIDir), "victim.json")
	if err := os.WriteFile(victim, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	const uid = "x/../../victim"
	err := harnesstest.Unprepare(t, p, uid)[uid]
	if err == nil || !strings.Contains(err.Error(), `claim UID "x/../../victim" has characters other than letters, digits and '-'`) {
		t.Errorf("unprepare: %v, want the UID refused", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("a file outside the CDI directory is gone: %v", err)
	}
}

// TestUnprepareFailureKeepsClaim: when the driver cannot undo a claim, the
// claim's error says so, the claim stays checkpointed as incomplete with
// its spec, and the kubelet's retry finishes the job.
func TestUnprepareFailureKeepsClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	if r := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-0"))); r.Err != nil {
		t.Fatalf("prepare: %v", r.Err)
	}
	e.drv.failUnprepare = true
	res, err := p.UnprepareResourceClaims(t.Context(), []kubeletplugin.NamespacedObject{
		{NamespacedName: types.NamespacedName{Namespace: "test", Name: "one"}, UID: uidA},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "unprepare claim test/one (" + uidA + "): undo claim " + uidA + ": injected failure"; res[uidA] == nil || res[uidA].Error() != want {
		t.Fatalf("error %v, want %q", res[uidA], want)
	}
	if c, ok := e.plugin(t).Prepared()[uidA]; !ok || !c.Incomplete {
		t.Errorf("checkpoint has %+v (present %v), want the claim, incomplete", c, ok)
	}
	if _, err := os.Stat(e.specPath(uidA)); err != nil {
		t.Errorf("the spec of a claim that is not undone is gone: %v", err)
	}
	e.drv.failUnprepare = false
	if err := harnesstest.Unprepare(t, p, uidA)[uidA]; err != nil {
		t.Fatalf("unprepare again: %v", err)
	}
	if len(p.Prepared()) != 0 || len(e.drv.set()) != 0 || len(harnesstest.DirState(t, e.cfg.CDIDir)) != 0 {
		t.Errorf("after the retry: claims %v, hardware %v, specs %v; want none", p.Prepared(), e.drv.set(), harnesstest.DirState(t, e.cfg.CDIDir))
	}
}

// TestKeepSpecOnUnprepare: the hook is asked with the claim and its spec's
// path; when it keeps the spec, the claim is forgotten all the same.
func TestKeepSpecOnUnprepare(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var asked []string
	e.cfg.KeepSpecOnUnprepare = func(_ context.Context, claim kubeletplugin.NamespacedObject, spec string) bool {
		asked = append(asked, claim.NamespacedName.String()+" "+string(claim.UID)+" "+spec)
		return claim.UID == uidA
	}
	p := e.plugin(t)
	var objs []kubeletplugin.NamespacedObject
	for i, uid := range []string{uidA, uidB} {
		name := fmt.Sprintf("c%d", i)
		if r := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim(name, uid, harnesstest.AllocResult(testDriver, testNode, "r", fmt.Sprintf("dev-%d", i)))); r.Err != nil {
			t.Fatalf("prepare %s: %v", uid, r.Err)
		}
		objs = append(objs, kubeletplugin.NamespacedObject{NamespacedName: types.NamespacedName{Namespace: "test", Name: name}, UID: types.UID(uid)})
	}
	res, err := p.UnprepareResourceClaims(t.Context(), objs)
	if err != nil || res[uidA] != nil || res[uidB] != nil {
		t.Fatalf("unprepare: %v %v", res, err)
	}
	want := []string{"test/c0 " + uidA + " " + e.specPath(uidA), "test/c1 " + uidB + " " + e.specPath(uidB)}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("hook asked (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(e.specPath(uidA)); err != nil {
		t.Errorf("the kept spec is gone: %v", err)
	}
	if _, err := os.Stat(e.specPath(uidB)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the other spec is still there (stat: %v)", err)
	}
	if claims := e.plugin(t).Prepared(); len(claims) != 0 {
		t.Errorf("claims still checkpointed: %v", claims)
	}
}

// TestRestartBetweenPrepareAndUnprepare: a new plugin on the same
// directories knows the prepared claim from the checkpoint, refuses its
// device to others and unprepares it.
func TestRestartBetweenPrepareAndUnprepare(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	claim := harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-1"))
	if r := harnesstest.PrepareOne(t, e.plugin(t), claim); r.Err != nil {
		t.Fatalf("prepare: %v", r.Err)
	}

	restarted := e.plugin(t)
	want := map[string]pluginharness.Claim[record]{uidA: {Namespace: "test", Name: "one", Devices: []record{{
		PreparedDevice: pluginharness.PreparedDevice{Request: "r", Pool: testNode, Device: "dev-1", CDIDeviceIDs: []string{deviceID(uidA, "dev-1")}},
		Set:            true,
	}}}}
	if diff := cmp.Diff(want, restarted.Prepared()); diff != "" {
		t.Errorf("state after restart (-want +got):\n%s", diff)
	}
	other := harnesstest.PrepareOne(t, restarted, harnesstest.AllocatedClaim("two", uidB, harnesstest.AllocResult(testDriver, testNode, "r", "dev-1")))
	if other.Err == nil || !strings.Contains(other.Err.Error(), "already prepared for claim test/one") {
		t.Errorf("preparing dev-1 for a second claim after restart: got error %v, want 'already prepared for claim test/one'", other.Err)
	}
	if err := harnesstest.Unprepare(t, restarted, uidA)[uidA]; err != nil {
		t.Fatalf("unprepare after restart: %v", err)
	}
	if _, err := os.Stat(e.specPath(uidA)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("spec still exists after unprepare (stat: %v)", err)
	}
	if hw := e.drv.set(); len(hw) != 0 {
		t.Errorf("hardware after unprepare: %v", hw)
	}
	if claims := e.plugin(t).Prepared(); len(claims) != 0 {
		t.Errorf("checkpoint after unprepare still lists %v", claims)
	}
	// The device is free for the next claim.
	if r := harnesstest.PrepareOne(t, restarted, harnesstest.AllocatedClaim("next", uidC, harnesstest.AllocResult(testDriver, testNode, "r", "dev-1"))); r.Err != nil {
		t.Errorf("prepare after unprepare: %v", r.Err)
	}
}
