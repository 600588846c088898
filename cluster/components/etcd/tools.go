//go:build tools

// Package tools pins etcd's server package, which scripts/build-components.sh builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
