package worker

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestJobLogCarriesTheJob: a job's lines name its run, job and attempt, whichever level they
// are logged at, though the logger is made only when the job first logs.
func TestJobLogCarriesTheJob(t *testing.T) {
	for _, tc := range []struct {
		name  string
		log   func(*jobLog)
		level zapcore.Level
	}{
		{"info", func(l *jobLog) { l.Info("m", zap.Int("n", 1)) }, zapcore.InfoLevel},
		{"warn", func(l *jobLog) { l.Warn("m", zap.Int("n", 1)) }, zapcore.WarnLevel},
		{"error", func(l *jobLog) { l.Error("m", zap.Int("n", 1)) }, zapcore.ErrorLevel},
		{"through warner", func(l *jobLog) { warner(l).Warn("m", zap.Int("n", 1)) }, zapcore.WarnLevel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			l := &jobLog{base: zap.New(core), run: "r1", job: "j1", attempt: 2}
			if l.log != nil {
				t.Fatal("logger made before anything was logged")
			}
			tc.log(l)
			tc.log(l)
			entries := logs.All()
			if len(entries) != 2 {
				t.Fatalf("%d entries, want 2", len(entries))
			}
			for _, e := range entries {
				f := e.ContextMap()
				if e.Level != tc.level || f["run"] != "r1" || f["job"] != "j1" || f["attempt"] != int64(2) || f["n"] != int64(1) {
					t.Errorf("entry %v %v, want %v with run r1, job j1, attempt 2, n 1", e.Level, f, tc.level)
				}
			}
		})
	}
}
