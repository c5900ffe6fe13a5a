package bridge

import (
	"context"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// progressTable routes a server's notifications/progress to the tool call
// that sent the token. The zero value is ready to use.
type progressTable struct {
	// mu guards next and fans. It is never held with another lock of the
	// bridge (a fan's mu is taken after it is released).
	mu   sync.Mutex
	next int                     // the last token number handed out
	fans map[string]*progressFan // progress token → the call waiting for it
}

// progressFan forwards progress notifications to one running call until the
// call returns.
type progressFan struct {
	mu sync.Mutex               // guards fn; held while fn runs
	fn func(gateway.ToolUpdate) // nil once the call has returned
}

// watch returns a new progress token whose notifications go to fn until
// unwatch.
func (p *progressTable) watch(fn func(gateway.ToolUpdate)) (string, *progressFan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	token := "acp-agent-" + strconv.Itoa(p.next)
	fan := &progressFan{fn: fn}
	if p.fans == nil {
		p.fans = make(map[string]*progressFan)
	}
	p.fans[token] = fan
	return token, fan
}

// unwatch ends token: progress that arrives after the result is dropped.
func (p *progressTable) unwatch(token string, fan *progressFan) {
	p.mu.Lock()
	delete(p.fans, token)
	p.mu.Unlock()
	fan.mu.Lock()
	fan.fn = nil // progress can arrive after the result; drop it
	fan.mu.Unlock()
}

// lookup returns the fan of token, or nil.
func (p *progressTable) lookup(token string) *progressFan {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fans[token]
}

// send hands u to the call, unless it has returned.
func (f *progressFan) send(u gateway.ToolUpdate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fn != nil {
		f.fn(u)
	}
}

// onProgress handles notifications/progress for the call whose token it
// carries.
func (s *client) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	token, _ := req.Params.ProgressToken.(string)
	fan := s.progress.lookup(token)
	if fan == nil {
		return
	}
	fan.send(gateway.ToolUpdate{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message,
		Show: showFromMeta(s.spec.Transport, req.Params.Meta)})
}
