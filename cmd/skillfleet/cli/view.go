package cli

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/history"
)

// newViewCommand is `skillfleet view`: the web viewer, read-only, over the local history, on
// loopback, until interrupted.
func newViewCommand(e *env) *cobra.Command {
	var historyTarget, addr string
	cmd := &cobra.Command{
		Use:   "view",
		Short: "Browse the runs of the local history in the web viewer (read-only, on loopback)",
		Long: `view serves the web viewer over the runs skillfleet test keeps in the local history: the
runs, each run's cases, each case's epochs with their evidence and trajectory, comparisons of
two runs, and each run's HTML report. It only reads: nothing can be cancelled.

It listens on loopback only, and prints a link whose random token (new at each start) logs the
browser in; without the link, the login form takes the token. It serves until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			listen, err := fleet.CheckLoopbackAddr(addr)
			if err != nil {
				return usageErrorf("%v", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			store, err := openLocalHistory(ctx, historyTarget)
			if err != nil {
				return err
			}
			defer store.Close()
			token, err := viewToken()
			if err != nil {
				return failf("%v", err)
			}
			v, err := fleet.StartLocalViewer(fleet.LocalViewerConfig{Addr: listen, Token: token}, store)
			if err != nil {
				return failf("%v", err)
			}
			fmt.Fprintf(e.stderr, "skillfleet view: the runs of %s, read-only, until interrupted (Ctrl-C); open:\n", describeHistory(historyTarget))
			fmt.Fprintln(e.stdout, v.URL())
			if err := v.Serve(ctx); err != nil {
				return failf("%v", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&historyTarget, "history", "", "the history to read: a SQLite file or a postgres:// URL (default: the file skillfleet test writes)")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "where to listen: a loopback HOST:PORT (port 0: any free one)")
	return cmd
}

// viewToken is a fresh random token: 32 bytes, URL-safe.
func viewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", errors.New("no randomness for the viewer's token")
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// describeHistory names the history read, without a password.
func describeHistory(target string) string {
	if target == "" {
		if p, err := fleet.DefaultLocalHistory(); err == nil {
			return p
		}
		return "the local history"
	}
	return history.Describe(target)
}
