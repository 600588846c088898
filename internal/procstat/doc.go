// Package procstat reads a process's state from /proc/<pid>/stat: whether a
// process drakit started (by its PID) is still running. It only reads; it
// never signals a process.
package procstat
