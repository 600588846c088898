// Package opaqueconfig holds the steps of opaque driver configuration in
// claims (features' opaque-config.feature): a claim carries the sample
// config the driver's declaration supplies, and the container shows the
// effect the declaration says it has; without a sample the scenario is
// "not declared", never failed.
package opaqueconfig
