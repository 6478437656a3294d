package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	sandboxfiles "github.com/skillfleet/skillfleet/deploy/sandbox"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/sandbox"
)

func newSandboxCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Short: "Manage the sandbox image jobs run in", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return usageErrorf("a subcommand is required")
		}}
	var (
		image string
		force bool
	)
	build := &cobra.Command{
		Use:   "build [--image NAME] [--force]",
		Short: "Build the default sandbox image (quick when it exists)",
		Long: `Build makes sure the sandbox image exists. It returns at once when it does. Otherwise it
builds deploy/sandbox/Dockerfile through the Docker engine when the base image
(debian:bookworm-slim) is present or can be pulled, and else builds the same image from
Debian packages with debootstrap and docker import (needs root; about a minute).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := cmdutil.ConsoleLogger("info")
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "skillfleet-sandbox-build-")
			if err != nil {
				return failf("%v", err)
			}
			defer os.RemoveAll(dir)
			if err := sandboxfiles.WriteTo(dir); err != nil {
				return failf("%v", err)
			}
			docker, err := sandbox.NewDockerClient(cmd.Context())
			if err != nil {
				return failf("%v", err)
			}
			defer docker.Close()
			start := time.Now()
			err = sandbox.EnsureImage(cmd.Context(), docker, sandbox.ImageConfig{
				Name: image, DockerfileDir: dir, OfflineScript: filepath.Join(dir, "build-offline.sh"), Force: force,
			}, log)
			if err != nil {
				return failf("%v", err)
			}
			fmt.Fprintf(e.stdout, "sandbox image %s is ready (%s)\n", image, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	build.Flags().StringVar(&image, "image", sandbox.DefaultImage, "image name")
	build.Flags().BoolVar(&force, "force", false, "rebuild even when the image exists")
	cmd.AddCommand(build)
	return cmd
}
