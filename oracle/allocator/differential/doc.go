// Package differential holds the differential tests of drakit's reference
// allocator against upstream's (k8s.io/dynamic-resource-allocation/structured
// v0.37.2). It has no API: everything is in its _test.go files.
//
// Each run generates seeded random allocation problems (scenario.Scenario)
// covering several pools, slices and drivers, CEL selectors on attributes,
// counts, All, firstAvailable, matchAttribute and distinctAttribute, shared
// counters, consumable capacity, taints and tolerations, admin access, node
// selection, incomplete pools and devices already in use. Both allocators
// solve each one (upstream under a per-Allocate time budget); every non-nil
// result of either must pass the independent checker
// (oracle/allocator/check), and both must agree on satisfiability unless
// upstream ran out of time. A disagreement is shrunk (claims, requests,
// constraints, selectors, devices, slices dropped while it persists) and
// printed as scenario YAML that `drakit allocate -f` reads. Consumable
// capacity (KEP-5075) comes with every request policy (none, a range with
// or without a maximum, valid values) and with devices already shared by
// earlier claims.
//
// TestConsumableCapacityCases states KEP-5075's allocation rules case by
// case (shared capacity, what earlier claims left, defaults, rounding up to
// a minimum, a step or the next valid value, amounts above the policy, the
// whole device without a policy, devices never shared): both allocators
// must reach the stated verdict and record the stated consumed capacity.
//
//	go test ./oracle/allocator/differential                          # 2000 instances
//	go test ./oracle/allocator/differential -instances=20000 -seed=7
//	go test ./oracle/allocator/differential -upstream-timeout=1s
package differential
