package acp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Stream is one client's connection as a sequence of JSON-RPC messages:
// stdio's lines ([NewLineStream]), a WebSocket's text frames, or the POST
// bodies and SSE events of Streamable HTTP (package acp/remote). The Agent
// runs one engine over any Stream ([Agent.ServeStream]): the framing
// checks, the order of prompts and cancels, $/cancel_request, the limits
// and the pacing of replays are the same whatever carries the messages.
type Stream interface {
	// ReadMessage returns the next message from the client: one JSON text,
	// not yet checked (the Agent answers what is not JSON-RPC 2.0 itself),
	// or a *TooLargeError for a message over MaxFrameBytes, which the Agent
	// answers and goes on. Any other error ends the client's input: io.EOF
	// when the client is done. The Agent calls it from one goroutine and
	// keeps the returned slice.
	ReadMessage() ([]byte, error)
	// WriteMessage sends one message to the client: a JSON object followed
	// by '\n', which a transport that frames messages itself leaves out.
	// The Agent never calls it concurrently. It may block while the client
	// reads nothing (back-pressure); an error ends nothing by itself (the
	// input's end does), it is logged.
	WriteMessage(line []byte) error
}

// TooLargeError is ReadMessage's error for a message over MaxFrameBytes,
// which is never held whole: Size is its length in bytes, Head its top
// level (at most 64 KiB: nested objects and arrays as 0, long strings as
// ""), enough to find its id and method.
type TooLargeError struct {
	Size int
	Head []byte
}

// Error gives the message's size and the limit.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("a JSON-RPC message of %d bytes is over the limit of %d bytes", e.Size, MaxFrameBytes)
}

// ReadMessage reads one whole message from r, which ends where the message
// ends (a WebSocket frame's reader, a POST body), as a Stream's ReadMessage
// returns it: the message, or a *TooLargeError for one over MaxFrameBytes,
// of which no more than its skeleton is kept; or r's error.
func ReadMessage(r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, MaxFrameBytes+1))
	if err != nil {
		return nil, err
	}
	if n <= MaxFrameBytes {
		return buf.Bytes(), nil
	}
	sk := &skeleton{}
	sk.write(buf.Bytes())
	rest, err := io.Copy(skeletonWriter{sk}, r)
	if err != nil {
		return nil, err
	}
	return nil, &TooLargeError{Size: int(n + rest), Head: sk.out}
}

// skeletonWriter writes into a skeleton.
type skeletonWriter struct{ sk *skeleton }

func (w skeletonWriter) Write(p []byte) (int, error) {
	w.sk.write(p)
	return len(p), nil
}

// lineStream is stdio's Stream: one message a line.
type lineStream struct {
	in  *bufio.Reader
	out io.Writer
	// err is the input's end, returned once the last line has been.
	err error
}

// NewLineStream returns the Stream of newline-delimited JSON over in and
// out (stdin and stdout): each message is one line ("\r\n" is accepted), a
// line over MaxFrameBytes is never held whole, and each message written is
// one Write of out.
func NewLineStream(in io.Reader, out io.Writer) Stream {
	return &lineStream{in: bufio.NewReaderSize(in, 64<<10), out: out}
}

// ReadMessage implements Stream: the next non-empty line, without its line
// ending.
func (s *lineStream) ReadMessage() ([]byte, error) {
	for s.err == nil {
		line, size, sk, err := s.readLine()
		s.err = err
		switch {
		case sk != nil:
			return nil, &TooLargeError{Size: size, Head: sk.out}
		case len(bytes.TrimSpace(line)) > 0:
			return line, nil
		}
	}
	return nil, s.err
}

// WriteMessage implements Stream: line, with its '\n', in one Write.
func (s *lineStream) WriteMessage(line []byte) error {
	if s.out == nil {
		return errors.New("the stream has no output")
	}
	_, err := s.out.Write(line)
	return err
}

// readLine returns the next line without its line ending. A line over
// MaxFrameBytes is not kept: it is returned as its size and skeleton.
func (s *lineStream) readLine() (line []byte, size int, sk *skeleton, err error) {
	for {
		var chunk []byte
		chunk, err = s.in.ReadSlice('\n')
		size += len(chunk)
		if sk == nil && len(line)+len(chunk) > MaxFrameBytes+2 { // room for "\r\n"
			sk = &skeleton{}
			sk.write(line)
			line = nil
		}
		if sk != nil {
			sk.write(chunk)
		} else {
			line = append(line, chunk...)
		}
		if err != bufio.ErrBufferFull {
			break
		}
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if sk == nil && len(line) > MaxFrameBytes {
		sk = &skeleton{}
		sk.write(line)
		line = nil
	}
	if sk != nil {
		size = sk.n - trailingEOL(sk.tail)
	}
	return line, size, sk, err
}
