package testutil

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

func TestRefusedAddr(t *testing.T) {
	addr := RefusedAddr(t)
	for range 2 { // refused every time: the port stays reserved
		c, err := net.DialTimeout("tcp", addr, 30*time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("%s accepted a connection", addr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial %s: %v, want connection refused", addr, err)
		}
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("another listener took %s", addr)
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

func TestSignal_AwaitWakesOnNotify(t *testing.T) {
	var s Signal
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
			s.Notify()
		}
	}()
	if !s.Await(time.Minute, func() bool { return n.Load() == 3 }) {
		t.Fatal("Await gave up on a condition that became true")
	}
	if s.Await(0, func() bool { return false }) {
		t.Error("Await reported a condition that never held")
	}
	c := s.C()
	s.Notify()
	select {
	case <-c:
	default:
		t.Error("Notify did not close the channel C returned before it")
	}
}

func TestBuffer_AwaitWakesOnWrite(t *testing.T) {
	var b Buffer
	go func() {
		for _, w := range []string{"listening ", "on ", "127.0.0.1:7\n"} {
			_, _ = b.Write([]byte(w))
		}
	}()
	b.WaitFor(t, time.Minute, func(s string) bool { return strings.HasSuffix(s, "127.0.0.1:7\n") }, "the line was never written:\n%s", &b)
	if b.Await(0, func(s string) bool { return strings.Contains(s, "never") }) {
		t.Error("Await reported contents never written")
	}
	w := b.Written()
	_, _ = b.Write([]byte("x"))
	select {
	case <-w:
	default:
		t.Error("Write did not close the channel Written returned before it")
	}
}

func TestEnded(t *testing.T) {
	release := make(chan struct{})
	blocked := func() error { <-release; return nil }
	if Ended(0, blocked) {
		t.Error("Ended reported a wait that had not returned")
	}
	close(release)
	if !Ended(time.Minute, blocked, func() error { return errors.New("ended with an error") }) {
		t.Error("Ended gave up on waits that returned")
	}
}
