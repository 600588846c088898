package interpose

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func TestControlEndpoint(t *testing.T) {
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			ctx := context.Background()
			f := startFakeDriver(t, registerapi.DRAPlugin, drapb.DRAPluginService)
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = filepath.Join(f.dir, "control.sock")
			}
			ip, registrar := startInterposer(t, f, addr, nil)
			c, err := NewClient(ip.ControlAddr())
			if err != nil {
				t.Fatal(err)
			}
			k := newKubelet(t, registrar)

			info, err := c.Info(ctx)
			if err != nil || info.Driver != fakeName || info.DriverEndpoint != f.endpoint {
				t.Fatalf("Info = %+v, %v", info, err)
			}
			if _, err := c.AddRule(ctx, Rule{Method: MethodPrepare, Point: PointAfter, Times: 1}); err == nil || !strings.Contains(err.Error(), "rule: Required value: one action") {
				t.Errorf("AddRule without an action: %v, want the field error", err)
			}
			id, err := c.AddRule(ctx, Rule{Method: MethodPrepare, Point: PointAfter, Times: 1, Error: &StatusError{Code: "Unavailable", Message: "armed"}})
			if err != nil {
				t.Fatal(err)
			}
			if rules, err := c.Rules(ctx); err != nil || len(rules) != 1 || rules[0].ID != id {
				t.Errorf("Rules = %v, %v, want the armed rule %d", rules, err, id)
			}
			if _, err := k.prepare(ctx, "u1"); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "armed") {
				t.Errorf("prepare with the armed rule: %v", err)
			}
			if _, err := k.prepare(ctx, "u1"); err != nil {
				t.Errorf("prepare after the rule fired once: %v", err)
			}
			recs, err := c.Records(ctx, Filter{Method: MethodPrepare, ClaimUID: "u1"})
			if err != nil || len(recs) != 2 || recs[0].Code != "Unavailable" || !recs[1].OK() || !slices.Equal(recs[0].Faults, []string{"error Unavailable after NodePrepareResources"}) {
				t.Fatalf("Records = %+v, %v", recs, err)
			}
			if later, err := c.Records(ctx, Filter{After: recs[0].Seq}); err != nil || len(later) != 1 || later[0].Seq != recs[1].Seq {
				t.Errorf("Records after %d = %+v, %v", recs[0].Seq, later, err)
			}

			// Direct calls meet no fault and are recorded as direct.
			if _, err := c.AddRule(ctx, Rule{Method: MethodPrepare, Point: PointBefore, Drop: true}); err != nil {
				t.Fatal(err)
			}
			rec, err := c.Prepare(ctx, ClaimRef{Namespace: "ns", Name: "claim-u1", UID: "u1"}, ClaimRef{Namespace: "ns", Name: "b", UID: "bad"})
			good, _ := rec.Claim("u1")
			bad, _ := rec.Claim("bad")
			if err != nil || rec.Source != SourceDirect || !rec.OK() || !slices.Equal(good.CDIDeviceIDs(), []string{"fake.drakit.dev/dev=u1"}) || bad.Error == "" {
				t.Errorf("direct Prepare = %+v, %v", rec, err)
			}
			if rec, err := c.Unprepare(ctx, ClaimRef{Namespace: "ns", Name: "never", UID: "never"}); err != nil || !rec.OK() || !rec.Claims[0].Answered {
				t.Errorf("direct Unprepare = %+v, %v", rec, err)
			}
			if n, err := c.ClearRules(ctx); err != nil || n != 1 {
				t.Errorf("ClearRules = %d, %v, want the drop rule cleared", n, err)
			}
			if _, err := c.Prepare(ctx); err == nil || !strings.Contains(err.Error(), "at least one") {
				t.Errorf("direct Prepare without claims: %v", err)
			}
		})
	}
	if _, err := NewClient("10.0.0.1:80"); err == nil {
		t.Error("NewClient accepted an address outside the loopback")
	}
}
