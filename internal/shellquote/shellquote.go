// Package shellquote quotes strings as POSIX shell words: for the scripts
// drakit writes (shell assignments, a launcher script) and for command lines
// it prints in messages.
package shellquote

import "strings"

// Quote returns s as one single-quoted POSIX shell word: the shell reads
// back exactly s, whatever it holds.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
