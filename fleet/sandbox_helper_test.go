package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/sandbox"
)

// startRunner starts a sandbox runner on the real Docker engine with a worker id unique to this
// test, failing (never skipping) when the engine or the sandbox image is missing.
func startRunner(t *testing.T, name string, log *zap.Logger) *sandbox.Runner {
	t.Helper()
	ctx := context.Background()
	docker, err := sandbox.NewDockerClient(ctx)
	if err != nil {
		t.Fatalf("this test needs a Docker engine: %v", err)
	}
	t.Cleanup(func() { _ = docker.Close() })
	id := fmt.Sprintf("test-%s-%d-%d", name, os.Getpid(), time.Now().UnixNano()%1e6)
	runner, err := sandbox.New(sandbox.Config{WorkerID: id}, docker, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(ctx); err != nil {
		var missing *sandbox.ImageMissingError
		if errors.As(err, &missing) {
			t.Fatal(missing.Error())
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runner.Close(context.Background()) })
	return runner
}
