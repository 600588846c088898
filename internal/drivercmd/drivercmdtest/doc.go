// Package drivercmdtest holds the checks the driver commands' tests share:
// unsetting the flags' environment twins and checking that every field of
// a configuration is set by some flag.
package drivercmdtest
