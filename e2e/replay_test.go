package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// TestReplay_BusyClientKeepsConnection loads a stored 500-turn session
// (2,500 session/update notifications before the response) five times
// through acp-go-sdk's client side, whose connection queues at most 1,024
// notifications not yet handled and closes on overflow. The client is an
// editor that is busy for 75 ms when each replay starts (rendering, a GC
// pause) and then handles updates as fast as it can. The agent paces its
// notifications (a burst, then a steady rate), so the queue never fills:
// every load succeeds and delivers the whole transcript. Unpaced, the agent
// wrote the replay far faster than the client handled it, the queue
// overflowed and the client's SDK dropped the connection ("peer disconnected
// before response"). With -race the instrumented agent writes too slowly to
// overflow the queue either way; TestAgent_NotificationsArePaced (acp)
// checks the pacing itself in both modes.
//
// It runs serially: it measures the client's throughput against the
// agent's pace, which other tests' load would distort.
func TestReplay_BusyClientKeepsConnection(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	const sid, turns, perTurn, loads = "sess_replay", 500, 5, 5
	storeTurns(t, path, sid, dir, turns)

	var busy atomic.Bool // set before each load: the next update finds the editor busy
	rec := &acpclient.Recorder{OnUpdate: func(acpsdk.SessionNotification) {
		if busy.CompareAndSwap(true, false) {
			time.Sleep(75 * time.Millisecond) // the editor's stall, not a timing assertion
		}
	}}
	stderr := &testutil.Buffer{}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	p, err := acpclient.Start(agentBin, []string{"--verbose", "--store", path}, env, stderr, rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(20 * time.Second); err != nil {
			t.Errorf("agent stop: %v", err)
		}
		if t.Failed() {
			t.Logf("agent stderr:\n%s", stderr.String())
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := p.Initialize(ctx); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	for i := range loads {
		from := len(rec.Updates())
		busy.Store(true)
		if _, err := p.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: dir, McpServers: []acpsdk.McpServer{}}); err != nil {
			t.Fatalf("session/load %d of %d: %v", i+1, loads, err)
		}
		// acp-go-sdk returns the response only after every notification
		// that preceded it has been handled.
		if got := len(rec.Updates()) - from; got < turns*perTurn {
			t.Fatalf("session/load %d: %d session/update notifications replayed, want at least %d", i+1, got, turns*perTurn)
		}
	}
}
