package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/config"
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

// modelsFromConfig writes doc as a skillfleet.yaml, loads it as an operator's config is
// loaded and builds its agents and judge, closed when the test ends.
func modelsFromConfig(t *testing.T, doc map[string]any, log *zap.Logger) Models {
	t.Helper()
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), config.FileName)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, diags := config.Load(path)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	models, err := BuildModels(ModelsConfig{GatewayDir: filepath.Join(t.TempDir(), "gateway")}, cfg, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = models.Close() })
	return models
}
