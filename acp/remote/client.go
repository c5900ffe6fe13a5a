package remote

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// DialOptions configure Dial; nil is valid.
type DialOptions struct {
	// Token, if set, is sent as "Authorization: Bearer <token>" with every
	// request (and the WebSocket upgrade).
	Token string
	// Header holds more headers for every request.
	Header http.Header
	// Transport picks the transport: TransportWebSocket or TransportHTTP.
	// Empty tries a WebSocket first and falls back to Streamable HTTP when
	// the server refuses the upgrade (any status but 401 and 403, which
	// end the dial).
	Transport string
	// HTTPClient makes the HTTP requests; its Transport's TLS settings are
	// the WebSocket dialer's too. Nil means a client of its own. Either
	// way the connection keeps the cookies the server sets (a replica's
	// affinity cookie) in a jar of its own unless the client has one.
	HTTPClient *http.Client
	// HandshakeTimeout bounds the WebSocket upgrade; zero means 30 s.
	HandshakeTimeout time.Duration
	// Logger receives the transport's logs. Nil discards them.
	Logger *slog.Logger
}

// ClientConn is the client's side of one connection: the agent's messages
// in, the client's out, one at a time each way (ReadMessage from one
// goroutine, WriteMessage from one other). Get one from Dial.
type ClientConn struct {
	transport string
	l         link
}

// link is a transport's client side.
type link interface {
	read() ([]byte, error)
	write(msg []byte) error
	close() error
}

// Transport returns TransportWebSocket or TransportHTTP.
func (c *ClientConn) Transport() string { return c.transport }

// ReadMessage returns the agent's next message (a JSON text), or an error
// once the connection has ended (io.EOF: closed by the server or by
// Close).
func (c *ClientConn) ReadMessage() ([]byte, error) { return c.l.read() }

// WriteMessage sends one client message, a JSON object (a trailing '\n'
// is dropped). Over Streamable HTTP the first must be initialize; a
// request the server refuses with an HTTP error is answered, through
// ReadMessage, with a JSON-RPC error (-32603) whose data holds the status
// and body, as the SDK's client does; an error return means the
// connection has failed.
func (c *ClientConn) WriteMessage(line []byte) error {
	return c.l.write(bytes.TrimSuffix(line, []byte("\n")))
}

// Close ends the connection (Streamable HTTP: DELETE; WebSocket: a close
// frame), and ReadMessage returns io.EOF. It is idempotent.
func (c *ClientConn) Close() error { return c.l.close() }

// Dial connects to the ACP endpoint at rawURL (http, https, ws or wss:
// "https://gateway.example/acp"), as DialOptions say. A WebSocket is open
// when Dial returns; over Streamable HTTP the connection begins with the
// first message written (initialize).
func Dial(ctx context.Context, rawURL string, opts *DialOptions) (*ClientConn, error) {
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("gateway URL %q: want http://, https://, ws:// or wss:// and a host", rawURL)
	}
	httpURL, wsURL := *u, *u
	switch u.Scheme {
	case "http", "ws":
		httpURL.Scheme, wsURL.Scheme = "http", "ws"
	case "https", "wss":
		httpURL.Scheme, wsURL.Scheme = "https", "wss"
	default:
		return nil, fmt.Errorf("gateway URL %q: want http://, https://, ws:// or wss://", rawURL)
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	if hc.Jar == nil {
		jar, _ := cookiejar.New(nil) // never fails without options
		c := *hc
		c.Jar = jar
		hc = &c
	}
	header := o.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	if o.Token != "" {
		header.Set("Authorization", "Bearer "+o.Token)
	}
	switch o.Transport {
	case TransportHTTP:
		return &ClientConn{transport: TransportHTTP, l: newHTTPLink(httpURL.String(), header, hc, o.Logger)}, nil
	case "", TransportWebSocket:
	default:
		return nil, fmt.Errorf("transport %q: want %q or %q", o.Transport, TransportWebSocket, TransportHTTP)
	}
	d := websocket.Dialer{Jar: hc.Jar, HandshakeTimeout: o.HandshakeTimeout, Proxy: http.ProxyFromEnvironment}
	if d.HandshakeTimeout <= 0 {
		d.HandshakeTimeout = 30 * time.Second
	}
	if t, ok := hc.Transport.(*http.Transport); ok {
		d.TLSClientConfig = t.TLSClientConfig
		d.Proxy = t.Proxy
	}
	ws, resp, err := d.DialContext(ctx, wsURL.String(), header)
	if err == nil {
		return &ClientConn{transport: TransportWebSocket, l: newWSLink(ws)}, nil
	}
	if resp == nil || o.Transport == TransportWebSocket {
		return nil, dialError(wsURL.String(), resp, err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return nil, dialError(wsURL.String(), resp, err)
	}
	o.Logger.Info("the gateway refused a WebSocket: using Streamable HTTP", "url", httpURL.String(), "status", resp.StatusCode)
	return &ClientConn{transport: TransportHTTP, l: newHTTPLink(httpURL.String(), header, hc, o.Logger)}, nil
}

// dialError says why a WebSocket dial failed, with the server's reason when
// it answered.
func dialError(u string, resp *http.Response, err error) error {
	if resp == nil {
		return fmt.Errorf("connecting to %s: %w", u, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	resp.Body.Close()
	return &StatusError{Status: resp.StatusCode, Body: strings.TrimSpace(string(body)), URL: u}
}

// StatusError is an HTTP error status the gateway answered with.
type StatusError struct {
	Status int    // the HTTP status
	Body   string // the reason it gave (at most 8 KiB)
	URL    string
}

// Error reads "URL: 401 Unauthorized: <the gateway's reason>".
func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("%s: %d %s", e.URL, e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("%s: %d %s: %s", e.URL, e.Status, http.StatusText(e.Status), e.Body)
}

// wsLink is the WebSocket's client side.
type wsLink struct {
	ws   *websocket.Conn
	once sync.Once
}

func newWSLink(ws *websocket.Conn) *wsLink { return &wsLink{ws: ws} }

func (l *wsLink) read() ([]byte, error) {
	for {
		typ, msg, err := l.ws.ReadMessage()
		if err != nil {
			if websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				return nil, io.EOF
			}
			return nil, err
		}
		if typ == websocket.TextMessage {
			return msg, nil
		}
	}
}

func (l *wsLink) write(msg []byte) error { return l.ws.WriteMessage(websocket.TextMessage, msg) }

func (l *wsLink) close() error {
	var err error
	l.once.Do(func() {
		_ = l.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		err = l.ws.Close()
	})
	return err
}
