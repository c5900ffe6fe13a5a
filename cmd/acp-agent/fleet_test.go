package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTokens(t *testing.T, text string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadTokensFile(t *testing.T) {
	const a, b, a2 = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "rotated-token-0000000000000000001"
	good := "# tenants\nalice " + a + "\n\nbob   " + b + "\nalice " + a2 + "\n"
	tokens, err := readTokensFile(writeTokens(t, good, 0o600), "tenant")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{a: "alice", b: "bob", a2: "alice"}
	if len(tokens) != len(want) {
		t.Fatalf("tokens = %v, want %v", tokens, want)
	}
	for k, v := range want {
		if tokens[k] != v {
			t.Fatalf("tokens = %v, want %v", tokens, want)
		}
	}
	for _, tt := range []struct {
		text string
		mode os.FileMode
		want string
	}{
		{good, 0o640, "readable or writable by group or others (mode 0640)"},
		{good, 0o604, "chmod 600"},
		{"alice\n", 0o600, `line 1: want "TENANT TOKEN"`},
		{"alice tok extra\n", 0o600, "got 3 fields"},
		{"al/ice " + a + "\n", 0o600, `tenant "al/ice"`},
		{"-x " + a + "\n", 0o600, `tenant "-x"`},
		{"alice short\n", 0o600, "line 1: tenant alice: the token has 5 characters (5 different): a listener's token needs at least 32, of at least 8 different characters"},
		// The listener rule, on each line: 16 of one repeated, 39 of one.
		{"alice " + a + "\nbob aaaaaaaaaaaaaaaa\n", 0o600, "line 2: tenant bob: the token has 16 characters (1 different)"},
		{"bob " + strings.Repeat("a", 39) + "\n", 0o600, "line 1: tenant bob: the token has 39 characters (1 different)"},
		{"bob " + strings.Repeat("abcd", 10) + "\n", 0o600, "the token has 40 characters (4 different)"},
		{"alice " + a + "\nbob " + a + "\n", 0o600, "line 2: this token is already given to tenant alice"},
		{"# nothing\n", 0o600, "names no tenant"},
	} {
		_, err := readTokensFile(writeTokens(t, tt.text, tt.mode), "tenant")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("readTokensFile(%q, %o) = %v, want %q", tt.text, tt.mode, err, tt.want)
		}
	}
	if _, err := readTokensFile(filepath.Join(t.TempDir(), "missing"), "tenant"); err == nil || !strings.Contains(err.Error(), "--tokens-file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestRunGateway_TokensFileChecked(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(tokenEnv, "")
	loose := writeTokens(t, "alice 0123456789abcdef0123\n", 0o644)
	err := runGateway([]string{"--listen", "127.0.0.1:0", "--tokens-file", loose}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable tokens file: %v", err)
	}
	tight := writeTokens(t, "alice "+strongToken+"\n", 0o600)
	t.Setenv(tokenEnv, strongToken)
	err = runGateway([]string{"--listen", "127.0.0.1:0", "--tokens-file", tight}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "gives the default tenant's token") {
		t.Fatalf("the default token given to a tenant too: %v", err)
	}
}

func TestRun_GatewayFlagsAreGoneWithAPointerToConnect(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, args := range [][]string{{"--store", "gateway"}, {"--gateway", "ws://127.0.0.1:1"}} {
		err := run(args, strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "acp-agent connect URL") {
			t.Errorf("%v: %v, want a pointer to acp-agent connect", args, err)
		}
	}
}
