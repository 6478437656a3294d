// Package sandboxfiles embeds the sandbox image's build files (the Dockerfile and the offline
// build script), so `skillfleet sandbox build` works from any directory.
package sandboxfiles

import (
	"embed"
	"os"
	"path/filepath"
)

//go:embed Dockerfile build-offline.sh
var files embed.FS

// WriteTo writes the build files into dir: Dockerfile and an executable build-offline.sh.
func WriteTo(dir string) error {
	for _, name := range []string{"Dockerfile", "build-offline.sh"} {
		b, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if name == "build-offline.sh" {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, mode); err != nil {
			return err
		}
	}
	return nil
}
