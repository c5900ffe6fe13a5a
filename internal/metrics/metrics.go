package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Label names. Those of the OpenTelemetry semantic conventions are theirs
// with "." written "_".
const (
	labelModel     = "gen_ai_request_model"
	labelTokenType = "gen_ai_token_type"
	labelOperation = "gen_ai_operation_name"
	labelTool      = "gen_ai_tool_name"
	labelMethod    = "mcp_method_name"
	labelServer    = "mcp_server"
	labelOutcome   = "outcome"
	labelStop      = "stop_reason"
	labelDecision  = "decision"
	labelState     = "state"
)

// Metrics are acp-agent's metrics in a registry of their own. The zero
// value is not usable: call New. See the package doc for what records
// what.
type Metrics struct {
	reg *prometheus.Registry

	sessionsOpen                   prometheus.Gauge
	sessionsOpened, sessionsClosed prometheus.Counter
	turns                          *prometheus.CounterVec   // model, stop_reason
	turnDuration                   *prometheus.HistogramVec // stop_reason
	modelRequests                  *prometheus.CounterVec   // model, outcome
	modelDuration                  *prometheus.HistogramVec // operation, model
	tokens                         *prometheus.CounterVec   // model, token type
	cost                           *prometheus.CounterVec   // model
	toolCalls                      *prometheus.CounterVec   // server, tool, outcome
	toolDuration                   *prometheus.HistogramVec // method, server, tool, outcome
	permissions                    *prometheus.CounterVec   // decision
	signIns                        *prometheus.CounterVec   // outcome
	leaseWait                      *prometheus.HistogramVec // outcome
	leasesLost                     prometheus.Counter
	commitDuration                 *prometheus.HistogramVec // outcome
	committedTurns                 prometheus.Counter

	models, servers, tools *bounded
	// tenants: MCP servers' and their tools' names are not recorded
	// (Options.Tenants).
	tenants bool

	mu           sync.Mutex
	serverStates func() map[string]int // guarded by mu; nil: none
	auditDropped func() int64          // guarded by mu; nil: no audit log

	transportState // Transport (transport.go)
}

// Options configure Metrics. The zero value records every label.
type Options struct {
	// Tenants is set for a process whose tenants (or clients) share it: a
	// gateway with --tokens-file, mcp-server --listen with clients. Then
	// the names of MCP servers and their tools, which are one tenant's
	// (its mcpServers) and which one tenant could otherwise spend the
	// caps on, are recorded as Other; the agent's own tools (server "")
	// keep their names.
	Tenants bool
}

// New returns Metrics registered in a new registry, with the Go runtime's
// and the process's collectors. opts may be nil.
func New(opts *Options) *Metrics {
	var o Options
	if opts != nil {
		o = *opts
	}
	m := &Metrics{
		reg:    prometheus.NewRegistry(),
		models: newBounded(MaxModels), servers: newBounded(MaxServers), tools: newBounded(MaxTools),
		tenants: o.Tenants,
	}
	f := factory{m.reg}
	m.sessionsOpen = f.gauge("acp_agent_sessions_open", "Sessions live in this process.")
	m.sessionsOpened = f.counter("acp_agent_sessions_opened_total", "Sessions opened (new or loaded).")
	m.sessionsClosed = f.counter("acp_agent_sessions_closed_total", "Sessions ended.")
	m.turns = f.counterVec("acp_agent_turns_total", "Prompt turns ended, by model and stop reason (\"error\": the turn failed).", labelModel, labelStop)
	m.turnDuration = f.histogramVec("acp_agent_turn_duration_seconds", "Wall time of a prompt turn, model requests and tool calls included.",
		prometheus.ExponentialBuckets(0.01, 2, 16), labelStop)
	m.modelRequests = f.counterVec("gen_ai_client_requests_total", "Model requests, by model and outcome (ok, error).", labelModel, labelOutcome)
	m.modelDuration = f.histogramVec("gen_ai_client_operation_duration_seconds", "Wall time of a model request (OpenTelemetry gen_ai.client.operation.duration).",
		prometheus.ExponentialBuckets(0.01, 2, 14), labelOperation, labelModel)
	m.tokens = f.counterVec("gen_ai_client_token_usage_total", "Tokens of model requests as the provider reported them, by model and type (input: billed at the full input price, output, cache_read, cache_write).", labelModel, labelTokenType)
	m.cost = f.counterVec("acp_agent_model_cost_usd_total", "Price of the priced model requests, in US dollars, by model.", labelModel)
	m.toolCalls = f.counterVec("mcp_client_tool_calls_total", "Tool calls ended, by MCP server (\"\" for the agent's own tools), tool and outcome (ok, error, refused).", labelServer, labelTool, labelOutcome)
	m.toolDuration = f.histogramVec("mcp_client_operation_duration_seconds", "Wall time of an MCP request (OpenTelemetry mcp.client.operation.duration); tools/call of the tools that ran.",
		[]float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}, labelMethod, labelServer, labelTool, labelOutcome)
	m.permissions = f.counterVec("acp_agent_permission_decisions_total", "Permission decisions on tool calls, by decision (allow, deny: the policy's; allow_once, allow_always, reject, cancelled, unavailable: the user's; granted: an earlier allow_always).", labelDecision)
	m.signIns = f.counterVec("acp_agent_signins_total", "Sign-ins of MCP servers (OAuth), by outcome (started, completed, failed).", labelOutcome)
	m.leaseWait = f.histogramVec("acp_agent_lease_wait_seconds", "Time a turn waited for its session's lease, by outcome (acquired, busy, error); its count is the lease waits.",
		[]float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}, labelOutcome)
	m.leasesLost = f.counter("acp_agent_leases_lost_total", "Leases lost while their turn ran (the turn was cancelled).")
	m.commitDuration = f.histogramVec("acp_agent_store_commit_duration_seconds", "Wall time of one group commit of finished turns to the session store, by outcome (ok, error).",
		[]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}, labelOutcome)
	m.committedTurns = f.counter("acp_agent_store_committed_turns_total", "Turns committed to the session store.")
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "acp_agent_audit_dropped_lines_total",
		Help: "Audit log lines dropped: the writer fell behind, or the file took no more (a full disk). 0 without an audit log.",
	}, func() float64 {
		m.mu.Lock()
		f := m.auditDropped
		m.mu.Unlock()
		if f == nil {
			return 0
		}
		return float64(f())
	}))
	m.reg.MustRegister(serverStates{m}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry the metrics are in, for a test's Gather.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SessionOpened implements session.Observer.
func (m *Metrics) SessionOpened() { m.sessionsOpened.Inc(); m.sessionsOpen.Inc() }

// SessionClosed implements session.Observer.
func (m *Metrics) SessionClosed() { m.sessionsClosed.Inc(); m.sessionsOpen.Dec() }

// SignIn implements session.Observer.
func (m *Metrics) SignIn(outcome string) { m.signIns.WithLabelValues(outcome).Inc() }

// ModelRequest implements gateway.Observer: the request, its duration and
// its tokens and cost.
func (m *Metrics) ModelRequest(model string, u gateway.Usage, d time.Duration, err error) {
	model = m.models.value(model)
	m.modelRequests.WithLabelValues(model, outcome(err)).Inc()
	m.modelDuration.WithLabelValues("chat", model).Observe(d.Seconds())
	for typ, n := range map[string]int64{"input": u.InputTokens, "output": u.OutputTokens, "cache_read": u.CacheReadTokens, "cache_write": u.CacheWriteTokens} {
		if n > 0 {
			m.tokens.WithLabelValues(model, typ).Add(float64(n))
		}
	}
	if u.Cost > 0 {
		m.cost.WithLabelValues(model).Add(u.Cost)
	}
}

// TurnEnded implements gateway.Observer.
func (m *Metrics) TurnEnded(model string, stop gateway.StopReason, d time.Duration, err error) {
	s := string(stop)
	if err != nil || s == "" {
		s = "error"
	}
	m.turns.WithLabelValues(m.models.value(model), s).Inc()
	m.turnDuration.WithLabelValues(s).Observe(d.Seconds())
}

// ToolCallEnded implements gateway.Observer; a refused call counts but has
// no duration.
func (m *Metrics) ToolCallEnded(server, tool, outcome string, d time.Duration) {
	if m.tenants && server != "" {
		server, tool = Other, Other
	}
	server, tool = m.servers.value(server), m.tools.value(tool)
	m.toolCalls.WithLabelValues(server, tool, outcome).Inc()
	if outcome != "refused" {
		m.toolDuration.WithLabelValues("tools/call", server, tool, outcome).Observe(d.Seconds())
	}
}

// PermissionDecided implements gateway.Observer.
func (m *Metrics) PermissionDecided(decision string) {
	m.permissions.WithLabelValues(decision).Inc()
}

// LeaseWaited implements session.Observer: the wait for a turn's lease, by
// outcome.
func (m *Metrics) LeaseWaited(outcome string, d time.Duration) {
	m.leaseWait.WithLabelValues(outcome).Observe(d.Seconds())
}

// LeaseLost implements session.Observer.
func (m *Metrics) LeaseLost() { m.leasesLost.Inc() }

// StoreCommit records one group commit of turns (the func of
// session.History.ObserveCommits).
func (m *Metrics) StoreCommit(turns int, d time.Duration, err error) {
	m.commitDuration.WithLabelValues(outcome(err)).Observe(d.Seconds())
	if err == nil {
		m.committedTurns.Add(float64(turns))
	}
}

// ServerStates makes mcp_client_servers{state} read f at each scrape: the
// MCP servers of the live sessions by state (session.Core.ServerStates).
// Nil reports none.
func (m *Metrics) ServerStates(f func() map[string]int) {
	m.mu.Lock()
	m.serverStates = f
	m.mu.Unlock()
}

// AuditDropped makes acp_agent_audit_dropped_lines_total read f at each
// scrape: the audit log's dropped lines (audit.Log.Dropped). Nil reports 0.
func (m *Metrics) AuditDropped(f func() int64) {
	m.mu.Lock()
	m.auditDropped = f
	m.mu.Unlock()
}

// outcome is "ok" for a nil err, else "error".
func outcome(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// serverStatesDesc describes mcp_client_servers.
var serverStatesDesc = prometheus.NewDesc("mcp_client_servers", "MCP servers of the live sessions, by state (connecting, connected, failed, lost, closed, needs sign-in).", []string{labelState}, nil)

// serverStates collects mcp_client_servers from Metrics.serverStates.
type serverStates struct{ m *Metrics }

func (c serverStates) Describe(ch chan<- *prometheus.Desc) { ch <- serverStatesDesc }

func (c serverStates) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	f := c.m.serverStates
	c.m.mu.Unlock()
	if f == nil {
		return
	}
	for state, n := range f() {
		ch <- prometheus.MustNewConstMetric(serverStatesDesc, prometheus.GaugeValue, float64(n), state)
	}
}

// factory makes metrics registered in reg.
type factory struct{ reg *prometheus.Registry }

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}
