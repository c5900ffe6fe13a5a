package acp

import (
	"bufio"
	"context"
	"io"
	"testing"
	"testing/synctest"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// sendTimes serves an Agent over pipes (in a synctest bubble), calls send
// with it, ends the input, and returns when each line the agent wrote was
// read, from the start.
func sendTimes(send func(a *Agent)) []time.Duration {
	a := newTestAgent(nil)
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = a.Serve(context.Background(), agentIn, agentOut)
		agentOut.Close()
	}()
	start := time.Now()
	var at []time.Duration
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(clientIn)
		for sc.Scan() {
			at = append(at, time.Since(start))
		}
	}()
	send(a)
	clientOut.Close()
	<-served
	<-read
	return at
}

// Replayed notifications leave the agent at most notifyBurst back to back,
// then at notifyRate a second: by any time t after the first, at most
// notifyBurst + notifyRate*t have been written, however fast they are sent,
// so a client with a bounded notification queue (acp-go-sdk's holds 1,024)
// is not flooded by a long replay.
func TestAgent_ReplayedNotificationsArePaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3 * notifyBurst
		at := sendTimes(func(a *Agent) {
			for range n {
				a.conn.notifyPaced(context.Background(), "s", sdkUpdate(acpsdk.UpdateAgentMessageText("x")))
			}
		})
		if len(at) != n {
			t.Fatalf("%d notifications written, want %d", len(at), n)
		}
		for i, d := range at {
			if limit := notifyBurst + int(d.Seconds()*notifyRate); i+1 > limit+1 {
				t.Fatalf("%d notifications written by %v, want at most %d", i+1, d, limit)
			}
		}
		if want := time.Duration(n-notifyBurst) * time.Second / notifyRate; at[n-1] < want-time.Millisecond {
			t.Errorf("the last notification left at %v, want about %v", at[n-1], want)
		}
	})
}

// A live turn's notifications are not paced: many sessions' updates at once
// leave as fast as they are sent.
func TestAgent_LiveNotificationsAreNotPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3 * notifyBurst
		at := sendTimes(func(a *Agent) {
			for range n {
				a.conn.notify(context.Background(), "s", acpsdk.UpdateAgentMessageText("x"))
			}
		})
		if len(at) != n {
			t.Fatalf("%d notifications written, want %d", len(at), n)
		}
		if at[n-1] != 0 {
			t.Errorf("the last notification left at %v, want all at once", at[n-1])
		}
	})
}
