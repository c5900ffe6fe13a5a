// Package pgtest runs a throwaway PostgreSQL server for tests, from the
// operating system's packages (Debian's postgresql: initdb and postgres,
// found in PATH or /usr/lib/postgresql/*/bin).
//
// One server serves a whole test binary: it starts at the first [Start],
// listens only on a Unix socket in a temporary directory (no TCP port), and
// [Main] (or [Run]) stops it and removes its directory when the tests end. Each Start
// gets a fresh database, dropped at the test's end.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestX(t *testing.T) {
//		url := pgtest.Start(t) // postgres:///test_3?host=/tmp/pgtest123&user=postgres
//		...
//	}
//
// When PostgreSQL is not installed, Start fails the test saying that
// `make test` installs it: these tests are never skipped.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// server is the test binary's PostgreSQL; started once, by the first Start
// after Main.
var server struct {
	main  atomic.Bool // Main was called
	once  sync.Once
	dir   string    // temporary directory: data/ and the socket
	cmd   *exec.Cmd // the postmaster
	exit  chan struct{}
	err   error // why it did not start
	dbSeq atomic.Int64
}

// Main runs the tests of m, then stops the server if a test started it, and
// exits with the tests' code. Call it from TestMain.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with work of its own: it runs the tests of m,
// stops the server if a test started it, and returns m.Run's code.
func Run(m *testing.M) int {
	server.main.Store(true)
	defer stop()
	return m.Run()
}

// Start returns the URL of a new empty database on the test binary's
// server (started on first use), dropped when t ends. The URL names the
// superuser "postgres" and the socket directory; it carries no password
// (trust authentication on a socket only this machine's root and the
// postgres user can reach). It fails t when PostgreSQL is not installed or
// does not start, or when TestMain does not call [Main].
func Start(t testing.TB) string {
	t.Helper()
	if !server.main.Load() {
		t.Fatal("pgtest: call pgtest.Main(m) (or pgtest.Run) from the package's TestMain, so that the PostgreSQL server stops when the tests end")
	}
	tctx := t.Context()
	server.once.Do(func() { server.err = start(tctx) })
	if server.err != nil {
		t.Fatalf("pgtest: %v", server.err)
	}
	name := fmt.Sprintf("test_%d", server.dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(tctx, time.Minute)
	defer cancel()
	if err := admin(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		// t's context is cancelled before Cleanup runs.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(tctx), time.Minute)
		defer cancel()
		if err := admin(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: dropping database %s: %v", name, err)
		}
	})
	return URL(name)
}

// URL returns the URL of database name on the running server.
func URL(name string) string {
	q := url.Values{"host": {server.dir}, "user": {"postgres"}}
	return "postgres:///" + name + "?" + q.Encode()
}

// admin runs sql in the postgres database.
func admin(ctx context.Context, sql string) error {
	c, err := pgx.Connect(ctx, URL("postgres"))
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx)) // closed even if ctx ended
	_, err = c.Exec(ctx, sql)
	return err
}

// notInstalled says what to do when PostgreSQL's programs are missing.
const notInstalled = "PostgreSQL is not installed (no initdb in PATH or /usr/lib/postgresql/*/bin): run `make test`, which installs it (apt-get install postgresql, as root), or install the postgresql package yourself"

// binDir finds the directory of initdb and postgres: initdb's in PATH,
// else Debian's newest /usr/lib/postgresql/<version>/bin.
func binDir() (string, error) {
	return findBinDir(exec.LookPath, "/usr/lib/postgresql/*/bin/initdb")
}

// findBinDir is binDir with its lookups as arguments, for tests.
func findBinDir(lookPath func(string) (string, error), glob string) (string, error) {
	if p, err := lookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	matches, _ := filepath.Glob(glob)
	if len(matches) == 0 {
		return "", errors.New(notInstalled)
	}
	// The newest major version: /usr/lib/postgresql/15 before 9.6.
	slices.SortFunc(matches, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(a))))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(b))))
		return vb - va
	})
	return filepath.Dir(matches[0]), nil
}

// start runs initdb and the postmaster, and waits until it answers or ctx
// (the context of the test that needs the server first) ends. The server
// outlives ctx: it belongs to the test binary, and stop ends it.
func start(ctx context.Context) (err error) {
	bin, err := binDir()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		return err
	}
	server.dir = dir
	defer func() {
		if err != nil {
			stop()
		}
	}()
	// initdb refuses to run as root: run the server as the postgres user
	// (made by Debian's package), owning the directory.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root, PostgreSQL must run as the postgres user, which does not exist: %v (install the postgresql package)", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return err
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale", "C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// The postmaster is a child of this process (not daemonized by pg_ctl),
	// killed with it (Pdeathsig) if the test binary dies before Main stops
	// it: no server outlives its tests.
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir,
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=16MB")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Dir = dir
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %v", err)
	}
	server.cmd = cmd
	server.exit = make(chan struct{})
	go func() { // owned by stop, which waits for exit
		cmd.Wait()
		close(server.exit)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := admin(actx, "SELECT 1")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-server.exit:
			log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
			return fmt.Errorf("postgres exited at start: %s", strings.TrimSpace(string(log)))
		case <-ctx.Done():
			return fmt.Errorf("waiting for postgres to answer: %w", context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not answer within 2 minutes: %v", err)
		}
	}
}

// stop shuts the server down at once (SIGQUIT: pg_ctl stop -m immediate)
// and removes its directory.
func stop() {
	if server.cmd != nil {
		_ = server.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-server.exit:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-server.cmd.Process.Pid, syscall.SIGKILL)
			<-server.exit
		}
	}
	if server.dir != "" {
		_ = os.RemoveAll(server.dir)
	}
}
