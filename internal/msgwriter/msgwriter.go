// Package msgwriter is the one writer of a front end's connection: the
// JSON-RPC engine (acp-go-sdk's, go-sdk's) and the framing layer in front
// of it both write whole messages to the same output, and each must reach
// it in one piece. The ACP front end (acp's connection, over any
// acp.Stream) and the MCP front end's stdio transport (mcpserver) write
// through it.
package msgwriter

import (
	"io"
	"sync"
)

// Writer serializes whole-message writes to one output: each Write is one
// message (with its '\n', where the output wants one), handed to the
// output in one Write call, never while another is under way, so messages
// never interleave. Its methods are safe for concurrent use.
type Writer struct {
	mu sync.Mutex // held for the whole of one output Write
	w  io.Writer
}

// New returns the Writer of w. w sees one Write at a time; it may block
// (back-pressure), and then so do the writers behind it.
func New(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p, one whole message, as w's one Write, and returns what
// that Write returns.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// Close implements io.Closer and does nothing: the output outlives the
// connection that writes to it, and its owner closes it.
func (w *Writer) Close() error { return nil }
