package gateway_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// remedied is an error with a remedy of the test's choosing, wrapping err.
type remedied struct {
	msg, remedy string
	err         error
}

func (e *remedied) Error() string  { return e.msg }
func (e *remedied) Remedy() string { return e.remedy }
func (e *remedied) Unwrap() error  { return e.err }

func TestErrorText(t *testing.T) {
	full := &remedied{msg: "disk I/O error (778)", remedy: "once there is room, writes succeed again"}
	busy := &remedied{msg: "busy", remedy: "send the prompt again"}
	private := &remedied{msg: "private network address 10.0.0.7", remedy: " (set sandbox.allowPrivateNetworks to allow it)"}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"none", errors.New("boom"), "boom"},
		{"joined with ; ", busy, "busy; send the prompt again"},
		{"its own joint", private, "private network address 10.0.0.7 (set sandbox.allowPrivateNetworks to allow it)"},
		{"its own colon", &remedied{msg: "corrupt", remedy: ": delete it"}, "corrupt: delete it"},
		{"wrapped", fmt.Errorf("initialize failed: %w", private),
			"initialize failed: private network address 10.0.0.7 (set sandbox.allowPrivateNetworks to allow it)"},
		{"nested: innermost first", &remedied{msg: "lease lost (" + full.Error() + ")", remedy: "send the prompt again", err: full},
			"lease lost (" + full.Error() + "); once there is room, writes succeed again; send the prompt again"},
		{"joined: left to right", errors.Join(private, busy),
			private.Error() + "\nbusy (set sandbox.allowPrivateNetworks to allow it); send the prompt again"},
		{"the same remedy once", fmt.Errorf("%w: %w", busy, &remedied{msg: "again", remedy: "send the prompt again"}),
			"busy: again; send the prompt again"},
		{"empty remedy", &remedied{msg: "quiet"}, "quiet"},
		{"WithRemedy", fmt.Errorf("opening: %w", gateway.WithRemedy(errors.New("locked"), "or start with --store memory")),
			"opening: locked; or start with --store memory"},
	} {
		if got := gateway.ErrorText(tt.err); got != tt.want {
			t.Errorf("%s: ErrorText = %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// WithRemedy keeps err's text and chain, and adds nothing to nil or for an
// empty remedy.
func TestWithRemedy(t *testing.T) {
	base := &remedied{msg: "the database has schema version 9"}
	err := gateway.WithRemedy(base, ": upgrade")
	var got *remedied
	if err.Error() != base.Error() || !errors.As(err, &got) || got != base || !errors.Is(err, base) {
		t.Errorf("WithRemedy = %v, want %v's text, with errors.As and errors.Is seeing it", err, base)
	}
	var r gateway.Remedier
	if !errors.As(err, &r) || r.Remedy() != ": upgrade" {
		t.Errorf("WithRemedy's Remedier = %v", r)
	}
	if gateway.WithRemedy(nil, "x") != nil {
		t.Error("WithRemedy(nil) is not nil")
	}
	if got := gateway.WithRemedy(base, ""); got != error(base) {
		t.Errorf("WithRemedy(err, \"\") = %v, want err itself", got)
	}
	// A sentinel made with it is told by identity.
	sentinel := gateway.WithRemedy(errors.New("damaged"), "move it away")
	if wrapped := fmt.Errorf("open: %w", sentinel); !errors.Is(wrapped, sentinel) || gateway.ErrorText(wrapped) != "open: damaged; move it away" {
		t.Errorf("sentinel: Is %v, ErrorText %q", errors.Is(wrapped, sentinel), gateway.ErrorText(wrapped))
	}
}
