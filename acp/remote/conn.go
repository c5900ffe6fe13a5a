package remote

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/seed02d3eb6b/acp-agent/acp"
)

// Why a connection ended, as the Observer and the logs say it.
const (
	closeClient   = "client"
	closeIdle     = "idle"
	closeStalled  = "stalled"
	closeLimit    = "limit"
	closeShutdown = "shutdown"
	closeError    = "error"
)

// connection is one ACP connection of a Handler, whichever transport
// carries it: its agent, serving a stream, and the end of its input.
type connection struct {
	h         *Handler
	id        string
	tenant    string
	transport string
	agent     Conn
	// ctx is the agent's; cancel ends it (Shutdown's last resort).
	ctx    context.Context
	cancel context.CancelFunc
	// served is closed once the agent's ServeStream has returned and the
	// connection has left the Handler.
	served chan struct{}

	// in holds the messages POSTed and not yet read by the agent (HTTP).
	in chan []byte
	// inputEnded is closed when the input ends; reason says why.
	endOnce    sync.Once
	inputEnded chan struct{}
	reason     string // set once, before inputEnded is closed

	http *httpState // the HTTP streams; nil over WebSocket
	// onEnd, if set, runs once the input has ended: the WebSocket's wakes
	// its reader.
	onEnd atomic.Pointer[func()]
}

// newConnectionID returns a connection id: 26 random base32 characters.
func newConnectionID() string { return "conn_" + rand.Text() }

// open registers a new connection of tenant over transport, with its agent,
// or answers why not (429, 503, 500) and returns nil.
func (h *Handler) open(w http.ResponseWriter, r *http.Request, tenant, transport string) *connection {
	h.mu.Lock()
	switch {
	case h.closing:
		h.mu.Unlock()
		h.refuse(w, r, http.StatusServiceUnavailable, "the gateway is shutting down: connect to another replica, or again once it is back")
		return nil
	case len(h.conns) >= h.lim.MaxConnections:
		h.mu.Unlock()
		h.refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("the gateway holds %d ACP connections, its limit: try again later", h.lim.MaxConnections))
		return nil
	case h.perTenant[tenant] >= h.lim.MaxConnectionsPerTenant:
		h.mu.Unlock()
		w.Header().Set("Retry-After", "10")
		h.refuse(w, r, http.StatusTooManyRequests, fmt.Sprintf("this token's tenant has %d ACP connections open, the limit per tenant: close one (DELETE it, or close its WebSocket) first", h.lim.MaxConnectionsPerTenant))
		return nil
	}
	c := &connection{h: h, id: newConnectionID(), tenant: tenant, transport: transport, served: make(chan struct{}), inputEnded: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	h.conns[c.id] = c
	h.perTenant[tenant]++
	h.serving.Add(1)
	h.mu.Unlock()
	agent, err := h.newConn(tenant)
	if err != nil {
		h.log.Error("cannot serve an ACP connection", "tenant", tenant, "err", err)
		c.leave()
		h.serving.Done()
		c.cancel()
		h.refuse(w, r, http.StatusInternalServerError, "the gateway cannot serve a connection now (see its log)")
		return nil
	}
	c.agent = agent
	if h.opts.Observer != nil {
		h.opts.Observer.Opened(transport)
	}
	return c
}

// serve runs the connection's agent over s in a goroutine the Handler
// owns, and cleans up after it.
func (c *connection) serve(s acp.Stream) {
	log := c.h.log.With("connection", c.id, "transport", c.transport, "tenant", c.tenant)
	log.Info("ACP connection opened")
	go func() {
		defer c.h.serving.Done()
		defer c.cancel()
		if err := c.agent.ServeStream(c.ctx, s); err != nil {
			log.Warn("ACP connection ended with an error", "err", err)
		}
		c.end(closeClient) // the agent ended on its own (not reached today)
		if c.http != nil {
			c.http.finish()
		}
		c.leave()
		close(c.served)
		log.Info("ACP connection closed", "reason", c.reason)
		if c.h.opts.Observer != nil {
			c.h.opts.Observer.Closed(c.transport, c.reason)
		}
	}()
}

// end ends the connection's input for reason (the first reason given
// stays): its agent reads EOF, answers what is under way and ends its
// sessions.
func (c *connection) end(reason string) {
	c.endOnce.Do(func() {
		c.reason = reason
		close(c.inputEnded)
		if f := c.onEnd.Load(); f != nil {
			(*f)()
		}
	})
}

// leave removes the connection from its Handler, remembering its id as
// gone (410).
func (c *connection) leave() {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conns[c.id] == c {
		delete(h.conns, c.id)
		h.perTenant[c.tenant]--
		if h.perTenant[c.tenant] == 0 {
			delete(h.perTenant, c.tenant)
		}
		h.gone.add(c.id, c.tenant)
	}
}

// lookup returns tenant's open connection id, or answers 404 (unknown, or
// another tenant's) or 410 (ended lately) and returns nil.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request, tenant, id string) *connection {
	h.mu.Lock()
	c := h.conns[id]
	gone := c == nil && h.gone.has(id, tenant)
	h.mu.Unlock()
	switch {
	case c != nil && c.tenant == tenant:
		select {
		case <-c.inputEnded:
			h.refuse(w, r, http.StatusGone, fmt.Sprintf("ACP connection %s has ended (%s): initialize a new one", id, c.reason))
			return nil
		default:
			return c
		}
	case gone:
		h.refuse(w, r, http.StatusGone, fmt.Sprintf("ACP connection %s has ended: initialize a new one", id))
	default:
		h.refuse(w, r, http.StatusNotFound, fmt.Sprintf("unknown %s %q: initialize a connection first (POST initialize without the header)", HeaderConnectionID, id))
	}
	return nil
}

// goneMax is how many ended connections a Handler remembers (for 410).
const goneMax = 4096

// goneSet remembers the ids of connections that ended lately, with their
// tenants, the oldest forgotten first.
type goneSet struct {
	ids   map[string]string // id → tenant
	order []string
}

func (g *goneSet) add(id, tenant string) {
	if g.ids == nil {
		g.ids = make(map[string]string)
	}
	if len(g.order) >= goneMax {
		delete(g.ids, g.order[0])
		g.order = g.order[1:]
	}
	g.ids[id] = tenant
	g.order = append(g.order, id)
}

// has reports whether connection id of tenant ended lately; another
// tenant's ended connection is unknown to it.
func (g *goneSet) has(id, tenant string) bool {
	t, ok := g.ids[id]
	return ok && t == tenant
}
