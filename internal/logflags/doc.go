// Package logflags is the Kubernetes component logging that drakit's
// commands share (drakit itself and the reference driver commands of
// internal/drivercmd): component-base's logging configuration as flags
// (-v, --vmodule, --logging-format with the text and json formats,
// --log-flush-frequency and the alpha split-stream options), applied to
// klog once the flags are parsed, and the contextual logger a command
// hands down through its context.
//
// Apply may run more than once in a process (tests execute a command many
// times) as long as the configuration is the same; a changed one is an
// error, as component-base makes it.
package logflags
