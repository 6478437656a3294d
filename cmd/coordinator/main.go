// Command coordinator runs the skillfleet coordinator: the HTTP API that accepts suites, the
// planner that puts their jobs on JetStream, and the aggregator of results into reports. It
// turns flags into a fleet.CoordinatorConfig; package fleet wires and runs the daemon.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/changes"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/internal/httpserve"
	"github.com/skillfleet/skillfleet/internal/tenant"
)

type options struct {
	httpAddr     string
	embeddedNATS string
	dataDir      string
	token        string
	tokenFile    string
	deadline     time.Duration
	agents       []string
	knownAgents  []string
	maxDeadline  time.Duration
	maxJobsRun   int
	maxJobsToken int
	// maxJobsTeam is --max-jobs-per-team; maxSchedulesTeam --max-schedules-per-team;
	// maxJobs --max-jobs.
	maxJobsTeam, maxSchedulesTeam, maxJobs int
	// teamsFile is --teams-file; the team* fields are the --*-per-team defaults of a team's
	// share and bounds.
	teamsFile                                      string
	teamMaxRunning                                 int
	teamResultBytes, teamArtifactBytes, teamBundle string
	// memoryLimit is --memory-limit.
	memoryLimit string
	nats        cmdutil.NATSFlags
	queue       cmdutil.QueueFlags
	logLevel    string

	// viewerTokenFile is --viewer-token-file; secureCookies --secure-cookies.
	viewerTokenFile string
	secureCookies   bool
	// trustedProxies is --trusted-proxy.
	trustedProxies []string
	// proxyUser, proxyTeam and proxyRole are the --proxy-*-header flags; proxyDefaultRole
	// --proxy-default-role.
	proxyUser, proxyTeam, proxyRole, proxyDefaultRole string

	// history is --history; historyPasswordFile --history-password-file.
	history, historyPasswordFile string
	// quarantine is --quarantine (flaky or empty); quarantineFile --quarantine-file.
	quarantine, quarantineFile string

	metricsAddr                  string
	metricsTokenFile             string
	maxConns, maxConnsPerIP      int
	maxStreams, maxStreamsPerTok int
	// maxDocReads is --max-document-reads; maxDocReadsPerTok --max-document-reads-per-token.
	maxDocReads, maxDocReadsPerTok int
	minUploadRate                  int64
	uploadWindow                   time.Duration

	// tokens are resolved from token, tokenFile and $SKILLFLEET_TOKEN before run.
	tokens []coordinator.Token
	// viewers are read from viewerTokenFile before run.
	viewers []coordinator.Token
}

func main() {
	var o options
	os.Exit(cmdutil.Execute(newCommand(&o)))
}

// newCommand is the coordinator's command line, filling o.
func newCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "coordinator",
		Short:         "Run the skillfleet coordinator (HTTP API and web viewer, planner, result aggregator)",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := resolveTokens(cmd, o); err != nil {
				return err
			}
			return run(cmd.Context(), *o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.httpAddr, "http", "127.0.0.1:8080", "address of the HTTP API (/v1/), /healthz and /readyz (and /metrics, see --metrics), and of the web viewer at every other path")
	f.StringVar(&o.metricsAddr, "metrics", "", "address of a separate /metrics listener; empty serves /metrics on --http, \"off\" serves none")
	f.StringVar(&o.metricsTokenFile, "metrics-token-file", "", "file whose first line is the bearer token /metrics asks of scrapers (at least 16 bytes); without it /metrics is open")
	f.IntVar(&o.maxConns, "max-conns", httpserve.Defaults.MaxConns, "connections the API holds at once; over it one not serving a request is closed, the one sending its headers longest first")
	f.IntVar(&o.maxConnsPerIP, "max-conns-per-ip", httpserve.Defaults.MaxConnsPerIP, "connections one remote address may hold, those still sending headers included (0: no per-address cap)")
	f.IntVar(&o.maxStreams, "max-streams", coordinator.DefaultMaxStreams, "concurrent event streams (/v1/runs/{id}/events); over it: 429")
	f.IntVar(&o.maxStreamsPerTok, "max-streams-per-token", coordinator.DefaultMaxStreamsPerCaller, "concurrent event streams per token")
	f.IntVar(&o.maxDocReads, "max-document-reads", coordinator.DefaultMaxDocumentReads, "concurrent reads of documents (/v1/runs/{id}/results, /trajectory), each holding them decoded in memory; over it: 429")
	f.IntVar(&o.maxDocReadsPerTok, "max-document-reads-per-token", coordinator.DefaultMaxDocumentReadsPerCaller, "concurrent reads of documents per token (or proxy user)")
	f.Int64Var(&o.minUploadRate, "min-upload-rate", coordinator.DefaultMinUploadRate, "bytes/s an upload must average over --upload-rate-window, else 408 (0: no minimum)")
	f.DurationVar(&o.uploadWindow, "upload-rate-window", coordinator.DefaultUploadRateWindow, "window of --min-upload-rate")
	f.StringVar(&o.embeddedNATS, "embedded-nats", "", "run an embedded nats-server with JetStream on this address (host:port) instead of connecting to --nats")
	f.StringVar(&o.dataDir, "data", "./skillfleet-data", "directory for the embedded server's store and extracted bundles")
	f.StringVar(&o.token, "token", "", "bearer token required on /v1/ (also $SKILLFLEET_TOKEN); without one the API serves loopback callers only")
	f.StringVar(&o.tokenFile, "token-file", "", "file of bearer tokens, one per line: \"NAME TOKEN [team=TEAM] [role=admin|member|viewer]\" (default team \"default\", role member) or a bare token; # comments; a line of any other shape (a KEY=VALUE where the token belongs, an unknown or repeated key) stops the start")
	f.StringVar(&o.viewerTokenFile, "viewer-token-file", "", "file of read-only tokens for the web viewer, in --token-file's format (every one a viewer): their holders log in and read their team's pages, but cancel nothing; the API does not take them (needs --token or --token-file)")
	f.StringVar(&o.proxyUser, "proxy-user-header", "", "header an authenticating proxy at a --trusted-proxy address names its user in (single sign-on, as Grafana's auth proxy); from other addresses it is ignored")
	f.StringVar(&o.proxyTeam, "proxy-team-header", "", "header naming the proxy's user's team (absent: team default)")
	f.StringVar(&o.proxyRole, "proxy-role-header", "", "header naming the proxy's user's role: admin, member or viewer (absent: --proxy-default-role)")
	f.StringVar(&o.proxyDefaultRole, "proxy-default-role", "viewer", "role of a proxy's user whose role header is absent")
	f.StringSliceVar(&o.trustedProxies, "trusted-proxy", nil, "address or CIDR of a proxy in front (an ingress), repeatable: the limit on wrong tokens charges a request from one to the client its X-Forwarded-For names; from elsewhere the header is ignored")
	f.BoolVar(&o.secureCookies, "secure-cookies", false, "mark the web viewer's session cookie Secure on plain HTTP too (behind a proxy that terminates TLS); over TLS it always is")
	f.DurationVar(&o.deadline, "default-deadline", 6*time.Hour, "deadline of runs that set none")
	f.StringSliceVar(&o.agents, "agent", nil, "default agents for prompt cases (repeatable)")
	f.StringSliceVar(&o.knownAgents, "known-agent", nil, "agents a run may name (repeatable; default: the --agent list; with neither, names are not checked)")
	f.DurationVar(&o.maxDeadline, "max-deadline", 24*time.Hour, "longest deadline a run may ask for")
	f.IntVar(&o.maxJobsRun, "max-jobs-per-run", 100_000, "jobs a suite may expand into (cases × runs × agents); more is refused with 422")
	f.IntVar(&o.maxJobsToken, "max-jobs-per-token", 0, "jobs of one token's unfinished runs; a submission beyond it is refused with 422 (0: --max-jobs-per-team)")
	f.IntVar(&o.maxJobsTeam, "max-jobs-per-team", 0, "jobs of one team's unfinished runs, unless --teams-file says otherwise; a submission beyond it is refused with 422 (counted again after a restart; 0: twice --max-jobs-per-run)")
	f.IntVar(&o.maxJobs, "max-jobs", 0, "jobs of every team's unfinished runs together, whose plans the coordinator holds in memory; beyond it: 422 (0: ten times --max-jobs-per-run)")
	f.StringVar(&o.teamsFile, "teams-file", "", "file of the teams' shares and bounds, one team per line: \"TEAM [weight=N] [max_running=N] [max_jobs=N] [max_result_bytes=SIZE] [max_artifact_bytes=SIZE] [max_bundle_bytes=SIZE]\"; # comments; a team without a line gets weight 1 and the --*-per-team defaults")
	f.IntVar(&o.teamMaxRunning, "max-running-per-team", 0, "jobs one team may have queued and running at once in a lane (0: no cap beyond its fair share)")
	f.StringVar(&o.teamResultBytes, "max-result-bytes-per-team", "", "bytes of results one team's unfinished runs may hold, e.g. 512MiB (default: an eighth of --results-max-bytes); over it the team's runs wait and its new runs get 429")
	f.StringVar(&o.teamArtifactBytes, "max-artifact-bytes-per-team", "", "bytes of documents stored apart (long trajectories, output files) one team's unfinished runs may hold (default: an eighth of the artifacts stream's 1 GiB)")
	f.StringVar(&o.teamBundle, "max-bundle-bytes-per-team", "", "bytes of bundles one team's kept runs and pushed suites may hold (default: an eighth of --bundles-max-bytes); an upload beyond it gets 429")
	f.IntVar(&o.maxSchedulesTeam, "max-schedules-per-team", 20, "schedules one team may keep (the fleet keeps at most 200)")
	f.StringVar(&o.history, "history", "", "results history: a postgres:// URL (password from --history-password-file or $SKILLFLEET_HISTORY_PASSWORD), a SQLite file path, or off (default: history.db under --data)")
	f.StringVar(&o.historyPasswordFile, "history-password-file", "", "file whose first line is the PostgreSQL password of --history")
	f.StringVar(&o.quarantine, "quarantine", "", "quarantine policy of every run's report: flaky (cases the history labels flaky do not fail a run), or empty for none")
	f.StringVar(&o.quarantineFile, "quarantine-file", "", "file listing quarantined cases, one skill/case or skill/case@agent per line (# comments)")
	f.StringVar(&o.memoryLimit, "memory-limit", "768MiB", "soft memory limit of the coordinator (Go's GOMEMLIMIT, which overrides it), about three quarters of the memory it is given; 0: none. It holds the plans and aggregates of unfinished runs: about 110 bytes per job and 1.1 KiB per case (coordinator BenchmarkRunMemory), and their records for comparisons, 21 bytes per job and 64 per case (BenchmarkCompareRecords1M)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	o.nats.Register(f)
	o.queue.Register(f)
	return cmd
}

// resolveTokens fills o.tokens; an empty token is a usage error.
func resolveTokens(cmd *cobra.Command, o *options) error {
	toks, err := apiTokens(o.token, cmd.Flags().Changed("token"), o.tokenFile, "SKILLFLEET_TOKEN")
	o.tokens = toks
	if err != nil {
		return err
	}
	o.viewers, err = viewerTokens(o.viewerTokenFile)
	return err
}

func run(ctx context.Context, o options) error {
	log, err := cmdutil.Logger(o.logLevel)
	if err != nil {
		return cmdutil.Usage(err)
	}
	defer func() { _ = log.Sync() }()
	cfg, err := o.config()
	if err != nil {
		return err
	}
	if o.memoryLimit != "0" {
		limit, err := coordinator.ParseSize(o.memoryLimit)
		if err != nil {
			return cmdutil.Usage(fmt.Errorf("--memory-limit %q: %w", o.memoryLimit, err))
		}
		cmdutil.LimitDaemonMemory(limit)
	}
	d, err := fleet.NewCoordinatorDaemon(cfg, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return d.Run(ctx)
}

// config turns the flags into the daemon's configuration; its errors are usage errors.
func (o options) config() (fleet.CoordinatorConfig, error) {
	qcfg, err := o.queue.Config()
	if err != nil {
		return fleet.CoordinatorConfig{}, cmdutil.Usage(err)
	}
	ncfg, err := o.nats.Config("skillfleet-coordinator")
	if err != nil {
		return fleet.CoordinatorConfig{}, err
	}
	metricsToken, err := cmdutil.SecretFile("--metrics-token-file", o.metricsTokenFile)
	if err != nil {
		return fleet.CoordinatorConfig{}, err
	}
	// On the command line 0 is "no cap"; in httpserve and coordinator it is "the default".
	perIP, minRate := o.maxConnsPerIP, o.minUploadRate
	if perIP == 0 {
		perIP = -1
	}
	if minRate == 0 {
		minRate = -1
	}
	var proxies []netip.Prefix
	for _, p := range o.trustedProxies {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			a, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return fleet.CoordinatorConfig{}, cmdutil.Usage(fmt.Errorf("--trusted-proxy %q: want an address or a CIDR", p))
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		proxies = append(proxies, pfx.Masked())
	}
	proxy, err := proxyOf(o, proxies)
	if err != nil {
		return fleet.CoordinatorConfig{}, err
	}
	hist := fleet.HistoryConfig{Target: o.history}
	if err := fleet.RefuseHistoryPassword(o.history, "$SKILLFLEET_HISTORY_PASSWORD or a file named by --history-password-file"); err != nil {
		return fleet.CoordinatorConfig{}, cmdutil.Usage(err)
	}
	if history.IsPostgres(o.history) {
		if hist.Password, err = fleet.HistoryPassword(o.historyPasswordFile, "SKILLFLEET_HISTORY_PASSWORD"); err != nil {
			return fleet.CoordinatorConfig{}, cmdutil.Usage(err)
		}
	} else if o.historyPasswordFile != "" {
		return fleet.CoordinatorConfig{}, cmdutil.Usage(errors.New("--history-password-file needs a postgres:// --history"))
	}
	var quarantine flaky.Policy
	switch o.quarantine {
	case "", "off":
	case "flaky":
		quarantine.Flaky = true
	default:
		return fleet.CoordinatorConfig{}, cmdutil.Usage(fmt.Errorf("--quarantine must be flaky (or empty), got %q", o.quarantine))
	}
	if o.quarantineFile != "" {
		f, err := os.Open(o.quarantineFile)
		if err != nil {
			return fleet.CoordinatorConfig{}, cmdutil.Usage(fmt.Errorf("--quarantine-file: %w", err))
		}
		quarantine.Cells, err = changes.ParseQuarantineFile(f)
		f.Close()
		if err != nil {
			return fleet.CoordinatorConfig{}, cmdutil.Usage(fmt.Errorf("--quarantine-file %s: %w", o.quarantineFile, err))
		}
	}
	defaults, teams, err := o.teamPolicies(qcfg.ResultsMaxBytes, qcfg.ArtifactsMaxBytes, qcfg.BundlesMaxBytes)
	if err != nil {
		return fleet.CoordinatorConfig{}, err
	}
	return fleet.CoordinatorConfig{
		History:    hist,
		Quarantine: quarantine,
		HTTPAddr:   o.httpAddr, MetricsAddr: o.metricsAddr, MetricsToken: metricsToken, DataDir: o.dataDir,
		EmbeddedNATS: o.embeddedNATS, NATS: ncfg, Queue: qcfg,
		Coordinator: coordinator.Config{
			DefaultDeadline: o.deadline, Agents: o.agents, KnownAgents: o.knownAgents,
			MaxDeadline: o.maxDeadline, MaxJobsPerRun: o.maxJobsRun, MaxJobsPerPrincipal: o.maxJobsToken,
			MaxJobsPerTeam: o.maxJobsTeam, MaxSchedulesPerTeam: o.maxSchedulesTeam, MaxJobs: o.maxJobs,
			Teams: teams, TeamDefaults: defaults,
		},
		Web: fleet.WebConfig{ViewerTokens: o.viewers, SecureCookies: o.secureCookies},
		API: coordinator.APIConfig{
			Tokens:     o.tokens,
			Proxy:      proxy,
			MaxStreams: o.maxStreams, MaxStreamsPerCaller: o.maxStreamsPerTok,
			MaxDocumentReads: o.maxDocReads, MaxDocumentReadsPerCaller: o.maxDocReadsPerTok,
			MinUploadRate: minRate, UploadRateWindow: o.uploadWindow,
		},
		MaxConns: o.maxConns, MaxConnsPerIP: perIP, TrustedProxies: proxies,
	}, nil
}

// proxyOf is the authenticating proxy the --proxy-* flags describe (nil for none).
func proxyOf(o options, trusted []netip.Prefix) (*tenant.Proxy, error) {
	if o.proxyUser == "" && o.proxyTeam == "" && o.proxyRole == "" {
		return nil, nil
	}
	role, err := tenant.ParseRole(o.proxyDefaultRole)
	if err != nil {
		return nil, cmdutil.Usage(fmt.Errorf("--proxy-default-role: %w", err))
	}
	p := &tenant.Proxy{Trusted: trusted, UserHeader: o.proxyUser, TeamHeader: o.proxyTeam, RoleHeader: o.proxyRole, DefaultRole: role}
	if err := p.Check(); err != nil {
		return nil, cmdutil.Usage(err)
	}
	return p, nil
}

// teamPolicies reads --teams-file and the --*-per-team defaults; a byte bound not given is an
// eighth of its stream's limit (none when the stream has none).
func (o options) teamPolicies(results, artifacts, bundles int64) (coordinator.TeamPolicy, map[string]coordinator.TeamPolicy, error) {
	def := coordinator.TeamPolicy{MaxRunning: o.teamMaxRunning}
	for _, b := range []struct {
		flag, value string
		stream      int64
		dst         *int64
	}{
		{"--max-result-bytes-per-team", o.teamResultBytes, results, &def.MaxResultBytes},
		{"--max-artifact-bytes-per-team", o.teamArtifactBytes, artifacts, &def.MaxArtifactBytes},
		{"--max-bundle-bytes-per-team", o.teamBundle, bundles, &def.MaxBundleBytes},
	} {
		if b.value == "" {
			*b.dst = b.stream / 8
			continue
		}
		n, err := coordinator.ParseSize(b.value)
		if err != nil {
			return def, nil, cmdutil.Usage(fmt.Errorf("%s %q: %w", b.flag, b.value, err))
		}
		*b.dst = n
	}
	if o.teamsFile == "" {
		return def, nil, nil
	}
	data, err := os.ReadFile(o.teamsFile)
	if err != nil {
		return def, nil, cmdutil.Usage(fmt.Errorf("--teams-file: %w", err))
	}
	teams, err := coordinator.ParseTeams(string(data), o.teamsFile)
	if err != nil {
		return def, nil, cmdutil.Usage(err)
	}
	return def, teams, nil
}
