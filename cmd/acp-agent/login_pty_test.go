//go:build linux

package main

import (
	"bufio"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// TestLogin_TerminalHidesTheKey runs login on a pseudo-terminal: the
// provider answer is echoed as typed, the key is not.
func TestLogin_TerminalHidesTheKey(t *testing.T) {
	creds := loginEnv(t)
	master, slave := testutil.OpenPTY(t)
	var screen strings.Builder
	var mu sync.Mutex
	prompts := make(chan string, 8)
	var readers sync.WaitGroup
	readers.Go(func() {
		r := bufio.NewReader(master)
		var line strings.Builder
		for {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			mu.Lock()
			screen.WriteByte(b)
			mu.Unlock()
			line.WriteByte(b)
			if b == '\n' {
				line.Reset()
			}
			if b == ' ' && strings.HasSuffix(line.String(), ": ") {
				prompts <- line.String()
			}
		}
	})
	done := make(chan error, 1)
	go func() { done <- runLogin([]string{"--no-check"}, slave, slave, slave, creds) }()

	waitPrompt := func(want string) {
		t.Helper()
		select {
		case p := <-prompts:
			if !strings.Contains(p, want) {
				t.Fatalf("prompt %q, want %q", p, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no prompt %q", want)
		}
	}
	waitPrompt("Provider")
	fmt.Fprint(master, "openai\n")
	waitPrompt("API key (input hidden)")
	// The key is typed once the terminal no longer echoes.
	testutil.WaitFor(t, 30*time.Second, func() bool {
		tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		return tio.Lflag&unix.ECHO == 0
	}, "the terminal still echoes at the key prompt")
	fmt.Fprint(master, testKey+"\n")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("login did not end")
	}
	slave.Close()
	master.Close()
	readers.Wait()
	mu.Lock()
	defer mu.Unlock()
	if s := screen.String(); strings.Contains(s, testKey) || !strings.Contains(s, "openai") || !strings.Contains(s, "Stored the OpenAI API key") {
		t.Errorf("terminal showed:\n%s", s)
	}
	if creds.key("openai") != testKey {
		t.Error("key not stored")
	}
}
