package history

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The PostgreSQL tests start their own server: initdb into a temporary directory, postgres
// on a free loopback port with its socket in that directory. PostgreSQL refuses to run as
// root, so under root the server runs as the "nobody" user (its directory is handed to it).
// When the server cannot start the tests fail with the reason; set
// SKILLFLEET_TEST_POSTGRES=optional to skip them instead (loudly) on a machine without it.

// pgServer is one PostgreSQL server for the whole test binary.
type pgServer struct {
	dir  string
	port int
	cred *syscall.Credential
	cmd  *exec.Cmd
	n    atomic.Int64
}

var (
	pgOnce sync.Once
	pgSrv  *pgServer
	pgErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pgSrv != nil {
		pgSrv.stop()
		os.RemoveAll(pgSrv.dir)
	}
	os.Exit(code)
}

// postgresURL returns the URL of a fresh, empty database on the shared server.
func postgresURL(t testing.TB) string {
	t.Helper()
	pgOnce.Do(func() { pgSrv, pgErr = startPostgres() })
	if pgErr != nil {
		if os.Getenv("SKILLFLEET_TEST_POSTGRES") == "optional" {
			t.Skipf("PostgreSQL not available (SKILLFLEET_TEST_POSTGRES=optional): %v", pgErr)
		}
		t.Fatalf("PostgreSQL is required by these tests and could not be started (install Debian's postgresql, or set SKILLFLEET_TEST_POSTGRES=optional): %v", pgErr)
	}
	name := fmt.Sprintf("t%d", pgSrv.n.Add(1))
	db, err := sql.Open("pgx", pgSrv.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	return pgSrv.url(name)
}

func (p *pgServer) url(db string) string {
	return fmt.Sprintf("postgres://skillfleet@127.0.0.1:%d/%s?sslmode=disable", p.port, db)
}

// pgBinary finds a PostgreSQL program on PATH or in Debian's versioned directory, which the
// postgresql package does not put on PATH.
func pgBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", fmt.Errorf("%s not found on PATH nor in /usr/lib/postgresql/*/bin", name)
}

func startPostgres() (*pgServer, error) {
	initdb, err := pgBinary("initdb")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "skillfleet-pg-")
	if err != nil {
		return nil, err
	}
	p := &pgServer{dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("running as root, and there is no user nobody to run postgres as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	cmd := p.command(initdb, "-D", filepath.Join(dir, "data"), "-U", "skillfleet", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *pgServer) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return cmd
}

// start starts the server, on the port it had before when restarted.
func (p *pgServer) start() error {
	bin, err := pgBinary("postgres")
	if err != nil {
		return err
	}
	if p.port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		p.port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	logPath := filepath.Join(p.dir, "postgres.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	defer logf.Close()
	p.cmd = p.command(bin, "-D", filepath.Join(p.dir, "data"), "-p", strconv.Itoa(p.port), "-h", "127.0.0.1",
		"-k", p.dir, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=50")
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited: %v: %s", err, out)
		default:
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.port), time.Second); err == nil {
			c.Close()
			db, _ := sql.Open("pgx", p.url("postgres"))
			err := db.PingContext(context.Background())
			db.Close()
			if err == nil {
				go func() { p.exitErr(<-exited) }()
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.cmd.Process.Kill()
	out, _ := os.ReadFile(logPath)
	return fmt.Errorf("postgres did not accept connections within 30 s: %s", out)
}

var pgExited = make(chan error, 8)

func (p *pgServer) exitErr(err error) { pgExited <- err }

// stop shuts the server down (fast shutdown: clients are disconnected) and waits for it.
func (p *pgServer) stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-pgExited:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-pgExited
	}
	p.cmd = nil
}

// restartPostgres stops the shared server for down, then starts it again.
func restartPostgres(t *testing.T, down func()) {
	t.Helper()
	pgSrv.stop()
	down()
	if err := pgSrv.start(); err != nil {
		t.Fatalf("restarting postgres: %v", err)
	}
}
