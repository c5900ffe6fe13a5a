package bridge

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Backoff between redials of a lost server: the first redial after a loss
// is at once; after a failed one the next waits redialMinBackoff, doubling
// up to redialMaxBackoff.
const (
	redialMinBackoff = time.Second
	redialMaxBackoff = time.Minute
)

// isSessionLost reports whether err, from a request to an http or sse
// server, means the server no longer has the client's MCP session, so that
// a fresh initialize (and a retry) may succeed. The classes, in one place:
//
//   - HTTP 404 on a request carrying the session ID (go-sdk's
//     mcp.ErrSessionMissing): the server ended or forgot the session (MCP
//     Streamable HTTP, "Session Management", §5);
//   - HTTP 400 whose body speaks of the session ("Bad Request: No valid
//     session ID provided": the TypeScript SDK and supergateway after a
//     restart);
//   - the connection ended under the request: reset, refused (the server is
//     restarting), or closed mid-response (EOF), or go-sdk's connection
//     already closed (mcp.ErrConnectionClosed) because its stream broke.
func isSessionLost(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, mcp.ErrSessionMissing), errors.Is(err, mcp.ErrConnectionClosed):
		return true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	msg := strings.ToLower(err.Error())
	if strings.Contains(msg, "session") && (strings.Contains(msg, "bad request") || strings.Contains(msg, "session not found")) {
		return true
	}
	// net/http reports some resets only as text.
	return strings.Contains(msg, "connection reset by peer") || strings.Contains(msg, "server closed idle connection")
}

// neverReached reports whether err, from a request to an http or sse
// server, proves the server did not run the request: it answered that it
// has no such session (404, or 400 about the session), refused the
// connection, or net/http found the kept-alive connection closed before it
// sent anything. A reset or EOF mid-request proves nothing: the server may
// have run the call before the connection broke.
func neverReached(err error) bool {
	switch {
	case errors.Is(err, mcp.ErrSessionMissing), errors.Is(err, syscall.ECONNREFUSED):
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "session") && (strings.Contains(msg, "bad request") || strings.Contains(msg, "session not found")) ||
		strings.Contains(msg, "server closed idle connection")
}

// redials reports whether a lost connection of s is dialed again on the next
// call: for http and sse servers, which restart and expire sessions on
// their own. A stdio child that died stays failed: restarting it could
// repeat whatever made it die.
func (s *client) redials() bool {
	return s.spec.Transport == TransportHTTP || s.spec.Transport == TransportSSE
}

// now is the server's clock (Options.Clock, else time.Now).
func (s *client) now() time.Time {
	if s.opts.Clock != nil {
		return s.opts.Clock()
	}
	return time.Now()
}

// nextBackoff returns the wait after a failed redial that followed a wait of
// prev (0: none yet).
func nextBackoff(prev time.Duration) time.Duration {
	if prev <= 0 {
		return redialMinBackoff
	}
	return min(2*prev, redialMaxBackoff)
}

// backoffError is a call refused because a lost server's next redial is not
// due yet.
type backoffError struct {
	server  string
	retryIn time.Duration
	cause   error
}

func (e *backoffError) Error() string {
	return fmt.Sprintf("MCP server %q is unreachable (%s); the agent dials it again on the first call after %s",
		e.server, gateway.ErrorText(e.cause), e.retryIn.Round(100*time.Millisecond))
}

func (e *backoffError) Unwrap() error { return ErrNotConnected }
