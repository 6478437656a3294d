// Package cmdutil holds what the skillfleet commands share at their edges: flag groups for
// NATS, the queue and the models, the loggers, secrets from flags, files or the environment,
// and exit codes. What the flags configure is wired by package fleet.
package cmdutil

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/queue"
)

// usageError marks an error the user can fix by changing the command line (exit 2).
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// Usage marks err as a usage error.
func Usage(err error) error { return usageError{err} }

// Execute runs a daemon's root command and returns its exit code: 0, 2 for usage errors (and
// a *fleet.ConfigError, the daemon refusing its configuration), 1 for everything else.
func Execute(cmd *cobra.Command) int {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return Usage(err) })
	err := cmd.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", cmd.Name(), err)
	if IsUsage(err) || strings.Contains(err.Error(), "unknown flag") || strings.Contains(err.Error(), "accepts ") {
		return 2
	}
	return 1
}

// IsUsage reports whether err is fixed by changing the command line: a usage error, or a
// daemon refusing its configuration (*fleet.ConfigError).
func IsUsage(err error) bool {
	var u usageError
	var refused *fleet.ConfigError
	return errors.As(err, &u) || errors.As(err, &refused)
}

// Logger builds a JSON production logger at level.
func Logger(level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	return cfg.Build()
}

// ConsoleLogger builds a human-readable logger on stderr at level, for the user CLI.
func ConsoleLogger(level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05")
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(os.Stderr), lvl)
	return zap.New(core), nil
}

// Token picks a secret from the flag, else the file, else the environment variable; a file's
// trailing newline is dropped. Setting both the flag and the file is an error.
func Token(flag, file, envVar string) (string, error) {
	if flag != "" && file != "" {
		return "", errors.New("set the token with a flag or a file, not both")
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	if flag != "" {
		return flag, nil
	}
	return os.Getenv(envVar), nil
}

// SecretFile reads the secret in the first line of file, for the flag named flag: "" when no
// file is named. A file that cannot be read or whose first line is empty is a usage error.
func SecretFile(flag, file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", Usage(fmt.Errorf("%s: %w", flag, err))
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimRight(line, "\r")
	if line == "" {
		return "", Usage(fmt.Errorf("%s %s: the first line is empty", flag, file))
	}
	return line, nil
}

// NATSFlags are the connection flags of every process that talks to NATS.
type NATSFlags struct {
	URL, Creds, NKey, Token, TokenFile, User, Password, TLSCA, TLSCert, TLSKey, InboxPrefix string
}

// Register adds the flags to fs.
func (n *NATSFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&n.URL, "nats", "nats://127.0.0.1:4222", "NATS server URL(s), comma-separated")
	fs.StringVar(&n.Creds, "nats-creds", "", "NATS credentials file (JWT + seed)")
	fs.StringVar(&n.NKey, "nats-nkey", "", "NATS NKey seed file")
	fs.StringVar(&n.Token, "nats-token", "", "NATS token (also $SKILLFLEET_NATS_TOKEN)")
	fs.StringVar(&n.TokenFile, "nats-token-file", "", "file holding the NATS token")
	fs.StringVar(&n.User, "nats-user", "", "NATS user name")
	fs.StringVar(&n.Password, "nats-password", "", "NATS password (also $SKILLFLEET_NATS_PASSWORD)")
	fs.StringVar(&n.TLSCA, "nats-tls-ca", "", "PEM file of CAs that sign the NATS server's certificate")
	fs.StringVar(&n.TLSCert, "nats-tls-cert", "", "client certificate (PEM) for NATS mutual TLS")
	fs.StringVar(&n.TLSKey, "nats-tls-key", "", "client key (PEM) for NATS mutual TLS")
	fs.StringVar(&n.InboxPrefix, "nats-inbox-prefix", "", "prefix of the subjects replies come back on (default _INBOX); one per role lets NATS permissions keep each role's replies private (see deploy/nats/permissions.conf)")
}

// Config turns the flags into a checked queue.ConnectConfig; secrets may come from the
// environment so they stay out of process listings. Its errors are usage errors: an unreadable
// token file must stop the daemon, not let it connect without the token.
func (n *NATSFlags) Config(name string) (queue.ConnectConfig, error) {
	token, err := Token(n.Token, n.TokenFile, "SKILLFLEET_NATS_TOKEN")
	if err != nil {
		return queue.ConnectConfig{}, Usage(fmt.Errorf("NATS token: %w", err))
	}
	password := n.Password
	if password == "" {
		password = os.Getenv("SKILLFLEET_NATS_PASSWORD")
	}
	cfg := queue.ConnectConfig{
		URL: n.URL, Name: name, CredsFile: n.Creds, NKeyFile: n.NKey, Token: token,
		User: n.User, Password: password, TLSCA: n.TLSCA, TLSCert: n.TLSCert, TLSKey: n.TLSKey,
		InboxPrefix: n.InboxPrefix,
	}
	if err := cfg.Validate(); err != nil {
		return queue.ConnectConfig{}, Usage(err)
	}
	return cfg, nil
}

// QueueFlags tune the JetStream topology the coordinator creates; workers read the settings
// back from the consumers.
type QueueFlags struct {
	AckWait    time.Duration
	MaxDeliver int
	Replicas   int
	ResultsAge time.Duration
	// Size limits of the streams and the bundle store; 0 means none.
	JobsMaxBytes, JobsMaxMsgs, ResultsMaxBytes, BundlesMaxBytes int64
	JobsMaxMsgSize                                              int32
}

// Register adds the flags to fs.
func (q *QueueFlags) Register(fs *pflag.FlagSet) {
	d := queue.DefaultConfig()
	fs.DurationVar(&q.AckWait, "ack-wait", d.AckWait, "how long a job may go without a heartbeat before it is redelivered")
	fs.IntVar(&q.MaxDeliver, "max-deliver", d.MaxDeliver, "deliveries of a job before it is recorded as errored")
	fs.IntVar(&q.Replicas, "replicas", max(d.Replicas, 1), "JetStream replicas of streams and buckets (1 or 3 in a cluster)")
	fs.DurationVar(&q.ResultsAge, "results-max-age", d.ResultsMaxAge, "how long results, and so runs and their reports, are kept")
	fs.Int64Var(&q.JobsMaxBytes, "jobs-max-bytes", d.JobsMaxBytes, "bytes of queued jobs the jobs stream holds; beyond it new jobs wait (0: no limit)")
	fs.Int64Var(&q.JobsMaxMsgs, "jobs-max-msgs", d.JobsMaxMsgs, "queued jobs the jobs stream holds; beyond it new jobs wait (0: no limit)")
	fs.Int32Var(&q.JobsMaxMsgSize, "jobs-max-msg-size", d.JobsMaxMsgSize, "largest job message; bigger cases are refused at plan time (0: the server's max payload)")
	fs.Int64Var(&q.ResultsMaxBytes, "results-max-bytes", d.ResultsMaxBytes, "bytes of results kept; beyond it the oldest go, as at --results-max-age (0: no limit)")
	fs.Int64Var(&q.BundlesMaxBytes, "bundles-max-bytes", d.BundlesMaxBytes, "bytes of suite bundles stored; beyond it uploads are refused (0: no limit)")
}

// Config returns the queue configuration the flags describe.
func (q *QueueFlags) Config() (queue.Config, error) {
	c := queue.DefaultConfig()
	c.AckWait, c.MaxDeliver, c.Replicas, c.ResultsMaxAge = q.AckWait, q.MaxDeliver, q.Replicas, q.ResultsAge
	c.JobsMaxBytes, c.JobsMaxMsgs, c.JobsMaxMsgSize = q.JobsMaxBytes, q.JobsMaxMsgs, q.JobsMaxMsgSize
	c.ResultsMaxBytes, c.BundlesMaxBytes = q.ResultsMaxBytes, q.BundlesMaxBytes
	return c, c.Validate()
}
