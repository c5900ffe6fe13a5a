package mcpacp

import (
	"context"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// inbox holds the messages an mcp.Connection of this package hands to
// Read, in the order they were pushed (responses and the peer's requests
// or notifications). Its methods are safe for concurrent use.
type inbox struct {
	mu     sync.Mutex
	queue  []jsonrpc.Message
	closed bool
	ready  chan struct{} // signalled when queue grows
	done   chan struct{} // closed by close
}

func newInbox() *inbox {
	return &inbox{ready: make(chan struct{}, 1), done: make(chan struct{})}
}

// push queues msg, unless the inbox is closed.
func (b *inbox) push(msg jsonrpc.Message) {
	b.mu.Lock()
	if !b.closed {
		b.queue = append(b.queue, msg)
	}
	b.mu.Unlock()
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// read returns the next message. It returns io.EOF once the inbox is
// closed or end is closed (the ACP connection ended; nil: never), and
// ctx's error when ctx ends first.
func (b *inbox) read(ctx context.Context, end <-chan struct{}) (jsonrpc.Message, error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, io.EOF
		}
		if len(b.queue) > 0 {
			msg := b.queue[0]
			b.queue[0] = nil
			b.queue = b.queue[1:]
			b.mu.Unlock()
			return msg, nil
		}
		b.mu.Unlock()
		select {
		case <-b.ready:
		case <-b.done:
		case <-end:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// close drops what is queued and ends every read. It may be called once.
func (b *inbox) close() {
	b.mu.Lock()
	b.closed, b.queue = true, nil
	b.mu.Unlock()
	close(b.done)
}
