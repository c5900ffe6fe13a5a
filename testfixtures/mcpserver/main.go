// Command mcpserver is the Go MCP server that acp-agent's tests and demo run
// over stdio (server name "fixture"). It has one tool per thing the bridge
// must carry:
//
//	echo, add                  text (add also returns structured content)
//	image, audio               a tiny PNG, a tiny WAV
//	resource, resource_link    an embedded text resource, a resource link
//	slow                       sleeps, reports progress, honours cancellation
//	fail                       a result with isError
//	crash                      exits with status 3 in the middle of the call
//	spawn_grandchild           starts `sleep 600` in its process group
//	spawn_escapee              starts `sleep 600` out of its group (setsid), or as a daemon
//	env, roots                 the environment it got, the client's roots
//	headers                    the HTTP headers of the request (HTTP mode)
//	meta                       the string members of the request's _meta (traceparent, tracestate)
//	ask_name, sign_in          ask the user (form and URL elicitation), if the client can be asked
//	sample                     asks the client's model for a haiku (MCP sampling), even when not offered
//	a_tool_with_a_deliberately_very_long_name_that_needs_truncation_when_bridged
//
// It serves protocol 2025-11-25 (initialize) as well as 2026-07-28
// (server/discover, per-request _meta).
//
// With -stubborn it ignores SIGTERM and outlives its closed stdin: only
// SIGKILL ends it. -hang-tools-list is -stubborn and never answers
// tools/list.
//
// With -demo it offers only the tools worth showing a person (demoTools:
// echo, add, image, audio, resource, resource_link, headers, weather), as
// `make demo` runs it: the others are left out of tools/list and a
// tools/call of one is refused with an error. It combines with -http.
//
// With -http ADDR (such as 127.0.0.1:0) it serves Streamable HTTP at /mcp and
// legacy SSE at /sse instead of stdio, and prints its base URL
// ("http://127.0.0.1:PORT") as the first line on stdout.
//
// If FIXTURE_LOG names a file, every tools/call appends "called <tool>" to it,
// a notifications/cancelled from the client appends "received
// notifications/cancelled", and a cancelled slow call appends "cancelled slow". stdout carries MCP
// frames only; diagnostics go to stderr.
//
// If FIXTURE_SANDBOX_TOOLS is set, it also offers write_path, read_path
// and dial: a server that ignores its roots, for the session modes' tests.
//
// If FIXTURE_READY_FILE names a file, the fixture appends one line to it,
// in a single O_APPEND write, just before it starts serving (stdio, -http,
// -stubborn):
//
//	<pid> <exec> <ready>
//
// where exec is the earliest moment its Go code ran (package startclock:
// after the kernel's exec and the Go runtime's bootstrap, before the
// fixture's own package initialisation) and ready the moment it is about to
// read its first request, both in Unix nanoseconds. ready - exec is the
// fixture's start-up; benchmarks subtract it from session/new's wall time
// to see the agent's own work, and use the pid to check that teardown left
// nothing. Unset, nothing is written.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/mcpserver/startclock"
)

func main() {
	log.SetOutput(os.Stderr)
	log.SetPrefix("fixture: ")
	log.SetFlags(0)
	httpAddr := flag.String("http", "", "serve Streamable HTTP (/mcp) and SSE (/sse) on this address instead of stdio")
	stubborn := flag.Bool("stubborn", false, "ignore SIGTERM and outlive a closed stdin")
	hang := flag.Bool("hang-tools-list", false, "never answer tools/list; implies -stubborn")
	flag.BoolVar(&demo, "demo", false, "offer only the demo-worthy tools (echo, add, image, audio, resource, resource_link, headers, weather)")
	flag.Parse()
	if *stubborn || *hang {
		serveStubborn(*hang)
		return
	}
	if *httpAddr != "" {
		serveHTTP(*httpAddr)
		return
	}
	srv := newServer()
	reportReady()
	// Run returns nil when the client closes stdin.
	if err := srv.Run(context.Background(), cancelLogging{&mcp.StdioTransport{}}); err != nil {
		log.Fatal(err)
	}
}

// serveStubborn serves stdio like a server that ignores every way to end it
// but SIGKILL; with hang, it also never answers tools/list.
func serveStubborn(hang bool) {
	signal.Ignore(syscall.SIGTERM)
	srv := newServer()
	if hang {
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" {
					record("hanging in tools/list")
					sleepForever()
				}
				return next(ctx, method, req)
			}
		})
	}
	reportReady()
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
	sleepForever()
}

// sleepForever blocks without tripping the runtime's deadlock detector.
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// serveHTTP serves the fixture over HTTP until the process is killed or its
// stdin closes.
func serveHTTP(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := newServer()
	get := func(*http.Request) *mcp.Server { return srv }
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(get, nil))
	mux.Handle("/sse", mcp.NewSSEHandler(get, nil))
	// Legacy SSE carries calls in POSTs the SDK does not pass to handlers:
	// keep the headers of the last POST for the headers tool.
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			h := r.Header.Clone()
			lastPostHeader.Store(&h)
		}
		mux.ServeHTTP(w, r)
	})
	reportReady()
	fmt.Printf("http://%s\n", ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the parent going away ends the server
		os.Exit(0)
	}()
	log.Fatal(http.Serve(ln, record))
}

// lastPostHeader holds the headers of the last POST served in HTTP mode.
var lastPostHeader atomic.Pointer[http.Header]

// newServer returns the fixture server with all its tools.
func newServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1.0.0"}, &mcp.ServerOptions{
		Logger:                    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		SupportedProtocolVersions: maxProtocol(os.Getenv("FIXTURE_MAX_PROTOCOL")),
	})
	// Added after NewServer's own multi round-trip middleware, so it runs
	// first: one line per tools/call frame received.
	srv.AddReceivingMiddleware(logCalls)
	if demo {
		srv.AddReceivingMiddleware(demoOnly)
	}
	addTools(srv)
	if os.Getenv("FIXTURE_SANDBOX_TOOLS") != "" {
		addSandboxTools(srv)
	}
	return srv
}

// demo is set by -demo: newServer's servers offer only demoTools.
var demo bool

// demoTools are the tools -demo offers: those that show what the bridge
// carries, without the test-only ones (crash, spawn_grandchild, env, ...).
// An allowlist, so that a tool added for a test stays out of the demo.
var demoTools = []string{"echo", "add", "image", "audio", "resource", "resource_link", "headers", "weather"}

// demoOnly hides every tool outside demoTools from tools/list and refuses a
// tools/call of one.
func demoOnly(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" && !slices.Contains(demoTools, p.Name) {
			return nil, fmt.Errorf("fixture -demo: tool %q is test-only and not offered in demo mode", p.Name)
		}
		res, err := next(ctx, method, req)
		if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
			lt.Tools = slices.DeleteFunc(slices.Clone(lt.Tools), func(t *mcp.Tool) bool { return !slices.Contains(demoTools, t.Name) })
		}
		return res, err
	}
}

// maxProtocol returns the go-sdk's protocol versions up to max, or nil (all
// of them) when max is empty. ask_name, sign_in and sample ask with
// server-initiated requests, as TypeScript servers do, and go-sdk refuses
// those on 2026-07-28: tests of them set FIXTURE_MAX_PROTOCOL=2025-11-25, so
// that the fixture answers server/discover with an error as those servers do.
func maxProtocol(max string) []string {
	if max == "" {
		return nil
	}
	var out []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v <= max {
			out = append(out, v)
		}
	}
	return out
}

// logCalls records "called <tool>" for each tools/call.
func logCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
			record("called " + p.Name)
		}
		return next(ctx, method, req)
	}
}

// reportReady appends "<pid> <exec> <ready>" (Unix nanoseconds) to
// $FIXTURE_READY_FILE, if set: see the package comment.
func reportReady() {
	path := os.Getenv("FIXTURE_READY_FILE")
	if path == "" {
		return
	}
	line := fmt.Sprintf("%d %d %d\n", os.Getpid(), startclock.Exec.UnixNano(), time.Now().UnixNano())
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		log.Print(err)
		return
	}
	if _, err := f.WriteString(line); err != nil {
		log.Print(err)
	}
	if err := f.Close(); err != nil {
		log.Print(err)
	}
}

var recordMu sync.Mutex

// record appends line to $FIXTURE_LOG, if set, in a single O_APPEND write.
func record(line string) {
	path := os.Getenv("FIXTURE_LOG")
	if path == "" {
		return
	}
	recordMu.Lock()
	defer recordMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		log.Print(err)
		return
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		log.Print(err)
	}
	if err := f.Close(); err != nil {
		log.Print(err)
	}
}

// cancelLogging is a transport whose connection records "received
// notifications/cancelled" as it reads each one, in the read loop: before
// it can read the end of stdin and Run returns, so a cancellation sent just
// before the client closes the pipe is recorded before the process exits
// (a handler of the notification might not run by then).
type cancelLogging struct{ mcp.Transport }

// Connect implements mcp.Transport.
func (t cancelLogging) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return cancelLoggingConn{c}, nil
}

type cancelLoggingConn struct{ mcp.Connection }

func (c cancelLoggingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "notifications/cancelled" {
		record("received notifications/cancelled")
	}
	return msg, err
}
