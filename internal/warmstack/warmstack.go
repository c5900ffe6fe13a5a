// Package warmstack runs calls on goroutines kept from one call to the
// next, so that a deep call finds a stack that has already grown.
//
// A JSON-RPC engine (acp-go-sdk's) starts a goroutine per request. Its
// stack starts small (Go's adaptive start, the average of all goroutines)
// and a session/prompt turn runs deep (the runner, the bridge's go-sdk
// call, encoding/json's recursion over the updates), so each turn grew its
// new stack three or four times, each growth a copy that walks every frame:
// about a sixth of the agent's CPU on a /call turn. A Pool's goroutine
// keeps its stack between calls; the collector may halve an idle one's
// stack, and then the next call grows it once.
package warmstack

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs functions on its goroutines: an idle one when there is one,
// else a new one, which stays for the next call. At most maxIdle stay idle,
// each for at most the idle timeout, and none once it is closed. The zero
// Pool is not usable; see New. Its methods are safe for concurrent use.
type Pool struct {
	work    chan job // unbuffered: a send succeeds only to a waiting goroutine
	idle    atomic.Int32
	maxIdle int32
	timeout time.Duration
	closed  chan struct{}
	close   sync.Once
}

type job struct {
	f    func()
	done chan struct{} // closed once f returns; nil for Go
}

// New returns a Pool that keeps at most maxIdle (at least 1) goroutines
// waiting for work, each for at most timeout (> 0) before it exits.
func New(maxIdle int, timeout time.Duration) *Pool {
	return &Pool{work: make(chan job), maxIdle: int32(max(maxIdle, 1)), timeout: timeout, closed: make(chan struct{})}
}

// NewPerCPU returns the Pool a server's requests or turns run on: at most
// two idle goroutines per CPU (GOMAXPROCS), each for a minute.
func NewPerCPU() *Pool { return New(2*runtime.GOMAXPROCS(0), time.Minute) }

// Close ends p's idle goroutines, and each busy one once its call returns.
// Calls after Close still run, each on a goroutine of its own that ends
// with it. Close may be called more than once.
func (p *Pool) Close() { p.close.Do(func() { close(p.closed) }) }

// Do runs f on one of p's goroutines and returns when f has returned. A
// panic in f is not recovered: it ends the program, as it would on the
// caller's goroutine, with f's goroutine's trace.
func (p *Pool) Do(f func()) {
	j := job{f, make(chan struct{})}
	p.start(j)
	<-j.done
}

// Go starts f on one of p's goroutines and returns: the go statement, on a
// warm goroutine. The caller waits for f as it would for a go statement's.
func (p *Pool) Go(f func()) { p.start(job{f: f}) }

// start hands j to an idle goroutine, or to a new one.
func (p *Pool) start(j job) {
	select {
	case p.work <- j:
	default:
		go p.serve(j)
	}
}

// Idle reports how many of p's goroutines are done with their call and
// waiting for the next (or about to). It is exact once the Do calls that
// ended are known to have returned.
func (p *Pool) Idle() int { return int(p.idle.Load()) }

// serve runs j, then waits for the next job, until it finds p's idle
// goroutines at maxIdle or p closed, or waits timeout in vain.
func (p *Pool) serve(j job) {
	var t *time.Timer
	for {
		j.f()
		// Counted idle before Do returns, so that Idle is exact once it has.
		stay := p.idle.Add(1) <= p.maxIdle
		select {
		case <-p.closed:
			stay = false
		default:
		}
		if !stay {
			p.idle.Add(-1)
		}
		if j.done != nil {
			close(j.done)
		}
		if !stay {
			return
		}
		if t == nil {
			t = time.NewTimer(p.timeout)
		} else {
			t.Reset(p.timeout)
		}
		select {
		case j = <-p.work:
			p.idle.Add(-1)
		case <-t.C:
			p.idle.Add(-1)
			return
		case <-p.closed:
			p.idle.Add(-1)
			t.Stop()
			return
		}
	}
}
