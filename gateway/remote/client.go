package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/telemetry"
)

// ClientOptions configure a Client.
type ClientOptions struct {
	// URL is the gateway's WebSocket URL, such as "ws://127.0.0.1:7777".
	URL string
	// URLs, when set, are the WebSocket URLs of the replicas of a gateway
	// fleet, in order (URL is then ignored): the client connects to the
	// first that answers, and when the connection drops it reconnects to
	// the next one, round robin.
	URLs []string
	// Extensions are the protocol extensions the client needs, by name and
	// version, such as {ExtSessions: ExtSessionsVersion}: a gateway that does
	// not enable each of them in hello is refused (Dial fails, or a
	// reconnection tries the next URL).
	Extensions map[string]int
	// Token is the shared secret of the gateway, or "".
	Token string
	// Info is this translator's name and version, sent in connect.
	Info PeerInfo
	// History keeps the conversations of this translator's sessions: the
	// remote gateway keeps none. Nil means a new [gateway.MemoryHistory]
	// (or the one given to [Client.SetHistory]).
	History gateway.History
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts; zero means 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// Logger receives the client's logs. Nil discards them.
	Logger *slog.Logger
}

// Client is the Gateway of a translator whose gateway runs as a separate
// service, over the WebSocket protocol of docs/gateway-protocol.md. The
// session's tools stay here: the gateway invokes them back (tools.invoke).
// When the connection drops, a turn in flight ends with an error, and the
// client reconnects with backoff and registers the extra tools of every
// live session again. Safe for concurrent use.
type Client struct {
	opts ClientOptions
	log  *slog.Logger
	urls []string

	mu        sync.Mutex
	history   gateway.History
	url       string                     // the URL of the current (or last) connection
	next      int                        // index in urls of the next URL to dial
	ids       map[string]string          // session key → stored session id (sessions extension)
	fences    map[string]int64           // stored session id → lease token of its last turn
	synced    map[string]int64           // stored session id → lease token of the last turn the history holds as stored (ChatSendParams.HistoryLease)
	p         *peer                      // the current connection, nil while reconnecting
	connected chan struct{}              // closed when p is set; replaced when it drops
	models    []gateway.ModelInfo        // from hello
	tools     map[string][]*gateway.Tool // extra tools by session key, to invoke and re-register
	runs      map[string]*remoteRun      // turns in flight by run id
	closed    bool
	stop      context.CancelFunc
	wg        sync.WaitGroup
	runSeq    atomic.Uint64
}

type remoteRun struct {
	key  string
	emit func(gateway.Event)
	ask  gateway.AskFunc
	mu   sync.Mutex // serializes emit
}

var _ gateway.Gateway = (*Client)(nil)

// Dial connects to the gateway at opts.URL (or the first of opts.URLs that
// answers) and keeps a connection up until Close. The first connection must
// succeed. o is copied; nil, like an empty URL, is an error.
func Dial(ctx context.Context, o *ClientOptions) (*Client, error) {
	if o == nil {
		return nil, errors.New("gateway: no URL to dial")
	}
	opts := *o
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.History == nil {
		opts.History = &gateway.MemoryHistory{}
	}
	r := &Client{opts: opts, log: opts.Logger, history: opts.History, connected: make(chan struct{}), tools: make(map[string][]*gateway.Tool), runs: make(map[string]*remoteRun),
		urls: opts.URLs, ids: make(map[string]string), fences: make(map[string]int64), synced: make(map[string]int64)}
	if len(r.urls) == 0 {
		r.urls = []string{opts.URL}
	}
	r.url = r.urls[0]
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	var p *peer
	var hello Hello
	for range r.urls {
		var err error
		if p, hello, err = r.dialNext(ctx); err == nil {
			break
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if p == nil {
		return nil, errors.Join(errs...)
	}
	r.setPeer(p, hello)
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx)) // maintain outlives Dial's ctx; Close stops it
	r.stop = cancel
	r.wg.Go(func() { r.maintain(lctx, p) })
	return r, nil
}

// dialNext dials the next URL in turn (round robin) and, on success, makes
// it the current URL.
func (r *Client) dialNext(ctx context.Context) (*peer, Hello, error) {
	r.mu.Lock()
	url := r.urls[r.next%len(r.urls)]
	r.next = (r.next + 1) % len(r.urls)
	r.mu.Unlock()
	p, hello, err := r.dial(ctx, url)
	if err == nil {
		r.mu.Lock()
		r.url = url
		r.mu.Unlock()
	}
	return p, hello, err
}

// currentURL returns the URL of the current (or last) connection.
func (r *Client) currentURL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.url
}

// dial opens one connection to url and runs the handshake.
func (r *Client) dial(ctx context.Context, url string) (*peer, Hello, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	ws, resp, err := d.DialContext(ctx, url, http.Header{})
	if err != nil {
		if resp != nil {
			return nil, Hello{}, fmt.Errorf("gateway %s: %s", url, resp.Status)
		}
		return nil, Hello{}, fmt.Errorf("gateway %s: %w", url, err)
	}
	p := newPeer(ctx, ws, r.log)
	p.handle = r.handle
	p.onEvent = r.onEvent
	p.start()
	var hello Hello
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := p.call(hctx, "connect", ConnectParams{Protocol: ProtocolVersion, Client: r.opts.Info, Token: r.opts.Token, Extensions: r.opts.Extensions}, &hello); err != nil {
		p.close(websocket.CloseNormalClosure, "handshake failed")
		p.wait()
		return nil, Hello{}, fmt.Errorf("gateway %s refused the connection: %w", url, err)
	}
	for name, v := range r.opts.Extensions {
		if hello.Extensions[name] != v {
			p.close(websocket.CloseNormalClosure, "a needed extension is missing")
			p.wait()
			if name == ExtSessions {
				return nil, Hello{}, fmt.Errorf("gateway %s keeps no sessions (it does not offer the %q extension, version %d): start it with --store, or keep the sessions here (no --store gateway)", url, name, v)
			}
			return nil, Hello{}, fmt.Errorf("gateway %s does not offer the %q extension, version %d", url, name, v)
		}
	}
	return p, hello, nil
}

// setPeer makes p, whose connect hello answered, the current connection.
// The lease tokens of synced are forgotten: p may be another replica's, or
// a restarted gateway's whose own leases count again from 1.
func (r *Client) setPeer(p *peer, hello Hello) {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.synced)
	r.p, r.models = p, make([]gateway.ModelInfo, len(hello.Models))
	for i, m := range hello.Models {
		r.models[i] = gateway.ModelInfo{ID: m.ID, Label: m.Label, Thinking: m.Thinking, ThinkingOn: m.ThinkingOn, ToolSearch: m.ToolSearch}
	}
	close(r.connected)
}

// maintain waits for the connection to drop, then reconnects, to the next
// URL first (round robin), with exponential backoff once every URL has
// failed, and registers the live sessions' tools again.
func (r *Client) maintain(ctx context.Context, p *peer) {
	for {
		select {
		case <-p.Done():
		case <-ctx.Done():
			p.close(websocket.CloseNormalClosure, "translator closing")
			p.wait()
			return
		}
		r.log.Warn("gateway connection lost; reconnecting", "cause", p.Err())
		p.wait()
		r.mu.Lock()
		r.p, r.connected = nil, make(chan struct{})
		r.mu.Unlock()
		backoff := r.opts.MinBackoff
		for attempt := 1; ; attempt++ {
			np, hello, err := r.dialNext(ctx)
			if err == nil {
				p = np
				// Tools first: a turn sent as soon as the connection is
				// back must find the session's tools on the gateway.
				r.reregister(ctx, p)
				r.setPeer(p, hello)
				r.log.Info("gateway connection restored", "url", r.currentURL())
				break
			}
			if attempt%len(r.urls) != 0 && ctx.Err() == nil {
				r.log.Debug("gateway reconnect failed; trying the next URL", "err", err)
				continue
			}
			r.log.Debug("gateway reconnect failed", "err", err, "retry in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, r.opts.MaxBackoff)
		}
	}
}

func (r *Client) reregister(ctx context.Context, p *peer) {
	r.mu.Lock()
	sets := make(map[string][]*gateway.Tool, len(r.tools))
	for k, t := range r.tools {
		sets[k] = t
	}
	r.mu.Unlock()
	for key, tools := range sets {
		if err := p.call(ctx, "sessions.setExtraTools", SetExtraToolsParams{SessionKey: key, Tools: wireTools(tools)}, nil); err != nil {
			r.log.Warn("registering a session's tools again failed", "sessionKey", key, "err", err)
		}
	}
}

// current returns the live connection, waiting for a reconnect while ctx
// allows.
func (r *Client) current(ctx context.Context) (*peer, error) {
	for {
		r.mu.Lock()
		p, connected, closed := r.p, r.connected, r.closed
		r.mu.Unlock()
		if closed {
			return nil, errors.New("gateway client closed")
		}
		if p != nil {
			return p, nil
		}
		select {
		case <-connected:
		case <-ctx.Done():
			return nil, fmt.Errorf("gateway %s is unreachable (reconnecting): %w", r.currentURL(), context.Cause(ctx))
		}
	}
}

// Close ends the connection and stops reconnecting.
func (r *Client) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	if r.stop != nil {
		r.stop()
	}
	r.wg.Wait()
	return nil
}

func wireTools(tools []*gateway.Tool) []WireTool {
	out := make([]WireTool, len(tools))
	for i, t := range tools {
		out[i] = WireTool{Name: t.Name, Label: t.Label, Group: t.Group, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations, Kind: t.Kind}
	}
	return out
}

// SetExtraTools implements [gateway.Gateway].
func (r *Client) SetExtraTools(ctx context.Context, sessionKey string, tools []*gateway.Tool) error {
	r.mu.Lock()
	r.tools[sessionKey] = append([]*gateway.Tool(nil), tools...)
	r.mu.Unlock()
	p, err := r.current(ctx)
	if err != nil {
		return err
	}
	return p.call(ctx, "sessions.setExtraTools", SetExtraToolsParams{SessionKey: sessionKey, Tools: wireTools(tools)}, nil)
}

// ClearExtraTools implements [gateway.Gateway].
func (r *Client) ClearExtraTools(ctx context.Context, sessionKey string) error {
	r.mu.Lock()
	delete(r.tools, sessionKey)
	p := r.p
	r.mu.Unlock()
	r.hist().Forget(ctx, sessionKey) // waits for the session's commits, which use its lease token
	r.mu.Lock()
	// The key's stored session id stays known: a session/load of a session
	// that is open here learns it (sessions.get) before it ends the live
	// instance, whose clear comes here, and its turns must still name it.
	delete(r.fences, r.ids[sessionKey])
	delete(r.synced, r.ids[sessionKey])
	r.mu.Unlock()
	if p == nil {
		return nil // the gateway forgot the session's tools with the connection
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return p.call(cctx, "sessions.clearExtraTools", SessionKeyParams{SessionKey: sessionKey}, nil)
}

// SetHistory sets the History that keeps the sessions' conversations, for
// one that needs the client first (a session.History over [Client.Store]).
// Call it before the first session is opened.
func (r *Client) SetHistory(h gateway.History) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = h
}

func (r *Client) hist() gateway.History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.history
}

// Models implements [gateway.Gateway].
func (r *Client) Models() []gateway.ModelInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.models
}

// Send implements [gateway.Gateway]: chat.send, with chat.abort when ctx ends. A
// dropped connection ends the turn with a *gateway.TurnLostError.
func (r *Client) Send(ctx context.Context, req gateway.SendRequest, emit func(gateway.Event)) (gateway.StopReason, error) {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	p, err := r.current(wctx)
	cancel()
	if err != nil {
		return "", err
	}
	runID := req.RunID
	if runID == "" {
		runID = "run-" + strconv.FormatUint(r.runSeq.Add(1), 10)
	}
	run := &remoteRun{key: req.SessionKey, emit: emit, ask: req.Ask}
	r.mu.Lock()
	r.runs[runID] = run
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.runs, runID)
		r.mu.Unlock()
	}()
	r.mu.Lock()
	id := r.ids[req.SessionKey]
	r.mu.Unlock()
	// The last turn's commit, fenced by that turn's lease (which this
	// turn's chat.send replaces), is made: Append returned after it.
	view := r.hist().View(ctx, req.SessionKey)
	r.mu.Lock()
	synced := r.synced[id]
	r.mu.Unlock()
	params := ChatSendParams{SessionKey: req.SessionKey, RunID: runID, Message: req.Message, Model: req.Model, System: req.System, Toggles: req.Toggles, Meta: telemetry.Inject(ctx, nil),
		History: view.Messages, HistoryBase: view.Base, Compaction: view.Compaction, Usage: view.Usage, SessionID: id, HistoryLease: synced}
	var res ChatSendResult
	err = p.call(ctx, "chat.send", params, &res)
	switch {
	case ctx.Err() != nil:
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_ = p.call(actx, "chat.abort", ChatAbortParams{SessionKey: req.SessionKey, RunID: runID}, nil)
		cancel()
		return gateway.StopCancelled, nil
	case errors.Is(err, errConnClosed):
		return "", &gateway.TurnLostError{URL: r.currentURL(), Err: err}
	case err != nil:
		return "", fmt.Errorf("gateway: %w", err)
	}
	if id != "" && res.LeaseToken != 0 {
		// The turn's commit (sessions.appendTurn, made by the History's
		// Append below) carries the token: fenced by the turn's lease.
		r.mu.Lock()
		r.fences[id] = res.LeaseToken
		r.mu.Unlock()
	}
	// The history the turn ran on is the stored one; when it is not the
	// one kept here (another translator wrote the session), it is read
	// again, so the turn joins the stored history.
	fresh := !res.HistoryReloaded || r.reload(context.WithoutCancel(ctx), req.SessionKey, id)
	turn := gateway.Turn{StopReason: res.StopReason, Messages: res.Messages, Usage: res.Usage, Compaction: res.Compaction}
	if err := r.hist().Append(context.WithoutCancel(ctx), req.SessionKey, turn); err != nil {
		r.setSynced(id, 0)
		return "", fmt.Errorf("%w: %w", gateway.ErrTurnNotStored, err)
	}
	if fresh {
		// The history is the stored one up to this turn, committed under
		// its lease: the next turn's lease, if no one else's came between,
		// is the next token (ChatSendParams.HistoryLease).
		r.setSynced(id, res.LeaseToken)
	} else {
		r.setSynced(id, 0)
	}
	return res.StopReason, nil
}

// setSynced records token as the lease token of the last turn of stored
// session id that the history holds as stored (0: unknown), sent as the
// next chat.send's historyLease.
func (r *Client) setSynced(id string, token int64) {
	if id == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if token == 0 {
		delete(r.synced, id)
	} else {
		r.synced[id] = token
	}
}

// handle serves the gateway's requests: tools.invoke and permission.request.
func (r *Client) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "tools.invoke":
		var p ToolsInvokeParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, badRequest("tools.invoke: %v", err)
		}
		r.mu.Lock()
		var tool *gateway.Tool
		for _, t := range r.tools[p.SessionKey] {
			if t.Name == p.Name {
				tool = t
			}
		}
		peer := r.p
		r.mu.Unlock()
		if tool == nil {
			return nil, wireError(CodeNotFound, "session %q has no tool %q here", p.SessionKey, p.Name)
		}
		onUpdate := func(u gateway.ToolUpdate) {
			if peer != nil {
				_ = peer.event("tools.update", &ToolsUpdateParams{ToolCallID: p.ToolCallID, Update: u})
			}
		}
		res, err := tool.Execute(ctx, p.ToolCallID, p.Args, onUpdate)
		if err != nil {
			return nil, wireError(CodeInternal, "tool %s: %s", p.Name, err.Error())
		}
		return res, nil
	case "permission.request":
		var p PermissionParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, badRequest("permission.request: %v", err)
		}
		r.mu.Lock()
		run := r.runs[p.RunID]
		r.mu.Unlock()
		if run == nil || run.ask == nil {
			return PermissionResult{Outcome: "allow_once"}, nil
		}
		o, err := run.ask(ctx, gateway.PermissionRequest{Call: p.Call})
		if err != nil {
			o = gateway.PermissionCancelled
		}
		return PermissionResult{Outcome: permissionOutcomes[o]}, nil
	}
	return nil, wireError(CodeMethodNotFound, "unknown method %q", method)
}

// onEvent delivers a turn's events (notifications) to its emit, in order.
func (r *Client) onEvent(event string, payload json.RawMessage) {
	if event != "chat" {
		return
	}
	var ce ChatEvent
	if json.Unmarshal(payload, &ce) != nil {
		return
	}
	r.mu.Lock()
	run := r.runs[ce.RunID]
	r.mu.Unlock()
	if run == nil {
		return
	}
	if e, ok := ce.event(); ok {
		run.mu.Lock()
		run.emit(e)
		run.mu.Unlock()
	}
}
