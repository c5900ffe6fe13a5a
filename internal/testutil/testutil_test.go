package testutil

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestEventually(t *testing.T) {
	var n atomic.Int32
	if !Eventually(10*time.Second, func() bool { return n.Add(1) == 3 }) {
		t.Fatal("Eventually gave up on a condition that became true")
	}
	if got := n.Load(); got != 3 {
		t.Errorf("cond called %d times, want 3", got)
	}
	if Eventually(0, func() bool { return false }) {
		t.Error("Eventually reported a condition that never held")
	}
}

func TestAliveAndWaitGone(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !Alive(pid) {
		t.Fatalf("child %d not alive", pid)
	}
	_ = cmd.Process.Kill()
	// Not reaped yet: a zombie counts as gone.
	if !WaitGone(pid, 30*time.Second) {
		t.Fatalf("killed child %d still alive", pid)
	}
	_ = cmd.Wait()
	if Alive(pid) {
		t.Errorf("reaped child %d alive", pid)
	}
}

func TestFreePortAndWaitListening(t *testing.T) {
	port := FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if WaitListening(addr, 0) {
		t.Fatalf("%s accepted before anyone listened", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	defer func() { ln.Close(); <-accepted }()
	if !WaitListening(addr, 30*time.Second) {
		t.Errorf("%s never accepted", addr)
	}
}

func TestBuffer_ConcurrentWritesAndReads(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := len(b.String()); n != 400 {
		t.Errorf("len = %d, want 400", n)
	}
}
