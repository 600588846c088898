// Package kindconfig embeds cluster.yaml, the kind configuration the kit's
// kind provider (environment/kind) starts from, so that drakit creates kind
// clusters with it outside a checkout of the repository too.
package kindconfig

import _ "embed"

// ClusterYAML is cluster.yaml.
//
//go:embed cluster.yaml
var ClusterYAML []byte
