package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
)

// unanswered counts the requests handed to acp-go-sdk that it has not
// answered yet, by id, so that at the end of input Serve writes every
// answer before it returns (JSON-RPC 2.0: every request gets a response).
// The framing layer adds each request it forwards; the outWatcher removes
// one per response frame the SDK writes. Safe for concurrent use.
type unanswered struct {
	mu    sync.Mutex
	ids   map[string]int
	empty chan struct{} // closed while ids is empty
}

func newUnanswered() *unanswered {
	e := make(chan struct{})
	close(e)
	return &unanswered{ids: make(map[string]int), empty: e}
}

// add records a request with the JSON id raw.
func (u *unanswered) add(raw []byte) {
	key := idKey(raw)
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.ids) == 0 {
		u.empty = make(chan struct{})
	}
	u.ids[key]++
}

// answered records a response with the JSON id raw; an id not recorded
// (a response of the framing layer's own) changes nothing.
func (u *unanswered) answered(raw []byte) {
	key := idKey(raw)
	u.mu.Lock()
	defer u.mu.Unlock()
	n, ok := u.ids[key]
	if !ok {
		return
	}
	if n > 1 {
		u.ids[key] = n - 1
		return
	}
	delete(u.ids, key)
	if len(u.ids) == 0 {
		close(u.empty)
	}
}

// wait returns once every request recorded is answered (nil), or ctx's
// error; it reports how many were still unanswered.
func (u *unanswered) wait(ctx context.Context) (left int, err error) {
	u.mu.Lock()
	empty := u.empty
	u.mu.Unlock()
	select {
	case <-empty:
		return 0, nil
	case <-ctx.Done():
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, n := range u.ids {
			left += n
		}
		return left, ctx.Err()
	}
}

// idKey is the compact form of a JSON id, which the SDK's response copies
// as read.
func idKey(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// responsePrefix starts every frame of acp-go-sdk's that has an id (its
// responses and its requests to the client): it marshals the members in
// the order jsonrpc, id, method.
var responsePrefix = []byte(`{"jsonrpc":"2.0","id":`)

// responseID returns the id of frame when it is a JSON-RPC response (an id
// and no method), else nil.
func responseID(frame []byte) []byte {
	if !bytes.HasPrefix(frame, responsePrefix) {
		return nil
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(frame, &m) != nil || m.Method != "" || len(m.ID) == 0 {
		return nil
	}
	return m.ID
}
