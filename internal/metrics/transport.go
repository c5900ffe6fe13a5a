package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Transport returns the metrics of the network transport of ACP (an
// acp/remote.Observer: the gateway's /acp): connections open, opened and
// closed by transport and reason, requests refused by HTTP status, and
// messages and their bytes by transport and direction. They are registered
// on the first call.
func (m *Metrics) Transport() *TransportMetrics {
	m.transportOnce.Do(func() {
		f := factory{m.reg}
		const transport, direction = "transport", "direction"
		m.transport = &TransportMetrics{
			open:     f.gaugeVec("acp_agent_acp_connections_open", "ACP connections open over the network, by transport (http, websocket).", transport),
			opened:   f.counterVec("acp_agent_acp_connections_total", "ACP connections opened over the network, by transport.", transport),
			closed:   f.counterVec("acp_agent_acp_connections_closed_total", "ACP connections ended, by transport and reason (client, idle, stalled, limit, shutdown, error).", transport, "reason"),
			refused:  f.counterVec("acp_agent_acp_requests_refused_total", "Requests to /acp answered with an HTTP error, by status.", "status"),
			messages: f.counterVec("acp_agent_acp_messages_total", "ACP messages over the network, by transport and direction (in: from clients).", transport, direction),
			bytes:    f.counterVec("acp_agent_acp_message_bytes_total", "Bytes of ACP messages over the network, by transport and direction.", transport, direction),
		}
	})
	return m.transport
}

// TransportMetrics implements acp/remote.Observer. Safe for concurrent use.
type TransportMetrics struct {
	open                                     *prometheus.GaugeVec
	opened, closed, refused, messages, bytes *prometheus.CounterVec
}

// Opened implements remote.Observer.
func (t *TransportMetrics) Opened(transport string) {
	t.open.WithLabelValues(transport).Inc()
	t.opened.WithLabelValues(transport).Inc()
}

// Closed implements remote.Observer.
func (t *TransportMetrics) Closed(transport, reason string) {
	t.open.WithLabelValues(transport).Dec()
	t.closed.WithLabelValues(transport, reason).Inc()
}

// Refused implements remote.Observer.
func (t *TransportMetrics) Refused(status int) { t.refused.WithLabelValues(strconv.Itoa(status)).Inc() }

// Message implements remote.Observer.
func (t *TransportMetrics) Message(transport string, in bool, n int) {
	dir := "out"
	if in {
		dir = "in"
	}
	t.messages.WithLabelValues(transport, dir).Inc()
	t.bytes.WithLabelValues(transport, dir).Add(float64(n))
}

// transportState is Metrics' lazily made TransportMetrics.
type transportState struct {
	transportOnce sync.Once
	transport     *TransportMetrics
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}
