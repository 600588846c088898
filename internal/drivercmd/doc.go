// Package drivercmd is the command-line plumbing of drakit-driver, the one
// binary of the reference driver family (every --kind): flags with
// environment twins, the flags every driver on the kubelet plugin harness
// has, parsing with the logging flags, and the run loop around a driver's
// Run.
//
// Every flag has an environment twin: the twin's value, when the variable
// is set, replaces the default, and a flag given on the command line wins.
// A twin that does not parse is an error, "parse env NAME=value: ...",
// which Parse returns before it looks at the arguments. Parse refuses
// positional arguments. Run applies the logging flags, names the logger
// after the command and runs the driver until SIGTERM or SIGINT; Main
// prints Run's error once, prefixed with the command's name, and exits 1.
// drivercmdtest holds what the commands' tests share.
package drivercmd
