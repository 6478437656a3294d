package coordinator

import (
	"path"
	"regexp"
)

// absPath matches an absolute file path of two or more elements: a data dir, a spool or temp
// file, an extracted bundle. It starts after a space, quote, "(", "=" or ":", and no element
// is empty, so URLs ("http://host/a") are left alone.
var absPath = regexp.MustCompile(`(?:^|[\s"'(=:])(/[^\s"'():,;/]+(?:/[^\s"'():,;/]+)+)`)

// hidePaths replaces each absolute path in s by its last element, so an error body tells which
// file without telling a caller where the server keeps it.
func hidePaths(s string) string {
	return absPath.ReplaceAllStringFunc(s, func(m string) string {
		i := 0
		for i < len(m) && m[i] != '/' {
			i++
		}
		return m[:i] + ".../" + path.Base(m[i:])
	})
}
