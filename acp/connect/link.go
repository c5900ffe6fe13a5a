package connect

import (
	"context"
	"errors"
	"sync"
)

// Link is one connection to the gateway: the client's side of the
// gateway's acp.Stream (Streamable HTTP or WebSocket at /acp, package
// acp/remote; in tests, a pipe to an in-process acp.Agent).
//
// The Proxy calls ReadMessage from one goroutine and WriteMessage from
// several, never concurrently (it serializes them); Close may be called
// concurrently with both, and more than once.
type Link interface {
	// ReadMessage returns the next message from the gateway, a JSON text
	// without a line ending. io.EOF means the gateway closed the
	// connection; any error ends the Link (the Proxy dials again), except
	// an *acp.TooLargeError, a message over acp.MaxFrameBytes that was
	// not kept, which the Proxy answers or drops and reads on.
	ReadMessage() ([]byte, error)
	// WriteMessage sends one message to the gateway: a JSON object ending
	// in '\n' (a transport that frames messages itself leaves the '\n'
	// out). An error ends the Link. It may block while the gateway reads
	// nothing (back-pressure).
	WriteMessage(line []byte) error
	// Close ends the connection, and with it the gateway's sessions of
	// it: a ReadMessage or WriteMessage under way returns an error.
	Close() error
}

// DialFunc dials the gateway and returns a new Link to it: acp/remote's
// client in acp-agent connect, a pipe to an in-process agent in tests.
// ctx bounds the dial (DialTimeout at most). The Proxy calls it from one
// goroutine at a time, again after every drop (with backoff); an error
// wrapped by [Permanent] stops the retries at once.
type DialFunc func(ctx context.Context) (Link, error)

// Permanent marks a dial error that trying again cannot fix (the gateway
// refused the token, the URL names no gateway): the Proxy gives up at once
// instead of retrying for Options.MaxElapsed. errors.Is and errors.As see
// err through it. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// isPermanent reports whether err was marked by Permanent.
func isPermanent(err error) bool {
	var pe *permanentError
	return errors.As(err, &pe)
}

// link is one Link the Proxy dialed: its generation, its one writer, its
// reader's end and the local servers it carries (local.go).
type link struct {
	Link
	gen uint64 // counts the Links of the Proxy, from 1

	wmu sync.Mutex // serializes WriteMessage

	// done is closed when the reader (Proxy.readLink) has returned; err,
	// the first cause of the Link's end (a read or write error), is set
	// before it and read after it, or under emu.
	done chan struct{}
	emu  sync.Mutex
	err  error

	closeOnce sync.Once
	local     *localServers
}

// write sends one message to the gateway. A failure ends the Link (Close:
// its reader then returns), with the error as its cause.
func (l *link) write(msg []byte) error {
	l.wmu.Lock()
	err := l.WriteMessage(line(msg))
	l.wmu.Unlock()
	if err != nil {
		l.fail(err)
	}
	return err
}

// fail records err as the Link's cause unless it has one, and closes it.
func (l *link) fail(err error) {
	l.emu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.emu.Unlock()
	_ = l.Close()
}

// cause returns why the Link ended (nil while it has not).
func (l *link) cause() error {
	l.emu.Lock()
	defer l.emu.Unlock()
	return l.err
}

// close ends the Link and its local servers (their processes stop in the
// background: localServers.close). It is idempotent.
func (l *link) close() {
	l.closeOnce.Do(func() {
		l.fail(errClosedByProxy)
		l.local.close()
	})
}
