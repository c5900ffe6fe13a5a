package main

import (
	"context"
	"errors"
	"expvar"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"sync"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/metrics"
)

// debugCloseTimeout bounds how long exiting waits for the debug server's
// open requests (a running CPU profile, say) before it drops them.
const debugCloseTimeout = 2 * time.Second

// startDebug serves net/http/pprof (/debug/pprof/: goroutine, heap, profile,
// trace, ...) and expvar (/debug/vars) on addr, a loopback host:port given by --debug-addr ("" serves
// nothing). A host that is not a loopback IP or "localhost" is refused: the
// profiles show the process's memory, so they are never served beyond the
// machine; and a request whose Host is not loopback or that carries an
// Origin is refused (metrics.LocalOnly), so that a web page cannot read
// them through a name rebound to 127.0.0.1. The bound address (useful with port 0) is logged at info. The
// returned stop shuts the server down, waiting at most debugCloseTimeout,
// and waits for its goroutine; it may be called once.
func startDebug(addr string, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	if err := checkDebugAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also serves goroutine, heap, allocs, block, mutex, threadcreate
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/debug/vars", expvar.Handler()) // runtime.MemStats (memstats) and the command line, as JSON: cheap to poll
	stop = serveSide(ln, metrics.LocalOnly(mux), "--debug-addr", debugCloseTimeout, log)
	log.Info("serving pprof", "flag", "--debug-addr", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return stop, nil
}

// serveSide serves h on ln, a side listener of the agent's (flag names it
// in logs), until the returned stop, which shuts the server down (at most
// wait) and waits for its goroutine; call it once.
func serveSide(ln net.Listener, h http.Handler, flag string, wait time.Duration, log *slog.Logger) (stop func()) {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("a side server stopped", "flag", flag, "addr", ln.Addr().String(), "err", err)
		}
	})
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
		}
		wg.Wait()
	}
}

// checkDebugAddr accepts host:port where host is a loopback IP (127.0.0.0/8,
// ::1) or "localhost", and the port is a number (0 picks a free one).
func checkDebugAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--debug-addr %q: %v; want a loopback host:port such as 127.0.0.1:6060", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil || port == "" {
		return fmt.Errorf("--debug-addr %q: the port %q is not a port number; want a loopback host:port such as 127.0.0.1:6060", addr, port)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("--debug-addr %q: the host must be a loopback address (127.0.0.1, ::1 or localhost): the profiles expose the process's memory and are never served beyond this machine", addr)
	}
	return nil
}
