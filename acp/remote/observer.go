package remote

// Observer hears of a Handler's connections, for metrics. Its methods are
// called on the transport's goroutines and must not block.
type Observer interface {
	// Opened: a connection of transport (TransportHTTP, TransportWebSocket)
	// was initialized or upgraded.
	Opened(transport string)
	// Closed: a connection of transport ended, for reason: "client" (its
	// DELETE, a closed socket, the end of its input), "idle", "stalled"
	// (its client read none of its output for Limits.OutputStall), "limit"
	// (it broke another limit), "shutdown" or "error".
	Closed(transport, reason string)
	// Refused: a request was answered with an HTTP error status (401, 403,
	// 404, 409, 413, 429, ...).
	Refused(status int)
	// Message: one message of n bytes went in (from the client) or out (to
	// it) over transport; in is true for a client's.
	Message(transport string, in bool, n int)
}
