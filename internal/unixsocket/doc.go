// Package unixsocket holds the one rule about AF_UNIX socket paths that the
// kubelet-plugin harness (its drivers' sockets) and the interposer (the
// sockets it serves in the kubelet's directories) share: Linux refuses a
// path longer than MaxSocketPath bytes, and CheckSocketPath says so, with
// the path, its length and the limit, before anything binds it. It imports
// nothing of drakit, so neither side imports the other for it.
package unixsocket
