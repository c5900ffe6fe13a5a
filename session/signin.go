package session

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/mcppolicy"
)

// tellTimeout bounds one message to the client outside a turn: a
// [FrontEnd.Tell], a [ServerEvents] call, a commands update
// ([FrontEnd.CommandsChanged]), the end of a sign-in's elicitation.
const tellTimeout = 10 * time.Second

// signInPrompt returns the bridge.OAuth Prompt of a session: it asks the editor to open the sign-in link
// (ACP elicitation in URL mode) when the editor can, and tells the client
// that the interaction is complete when the sign-in ends; otherwise it
// gives the user the link (link: a message or a notice), and without
// either it only logs that /servers shows it. A user who declines or
// cancels the elicitation ends the sign-in.
func signInPrompt(log *slog.Logger, ed editor.Editor, link func(ctx context.Context, server, authURL string)) func(ctx context.Context, server, authURL string) error {
	return func(ctx context.Context, server, authURL string) error {
		if el, ok := ed.(editor.Elicitor); ok && ed.Capabilities().ElicitURL {
			id := rand.Text()
			res, err := el.Elicit(ctx, editor.ElicitRequest{
				Mode:    editor.ModeURL,
				Message: fmt.Sprintf("Sign in to MCP server %q to use its tools.", server),
				URL:     authURL,
				ID:      id,
			})
			switch {
			case err == nil && res.Action != "accept":
				return fmt.Errorf("the user answered %q to the sign-in of MCP server %q", res.Action, server)
			case err == nil || ctx.Err() != nil:
				// Accepted, or the sign-in ended before the answer came (the
				// browser was quicker than the editor's reply): either way
				// the editor is told the interaction is over.
				<-ctx.Done()
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tellTimeout)
				defer cancel()
				_ = el.CompleteElicitation(cctx, id) // best effort
				return nil
			}
			log.Warn("asking the editor to open the sign-in link failed; sending it as a message", "server", server, "err", err)
		}
		if link != nil {
			link(ctx, server, authURL)
			return nil
		}
		log.Info("MCP server needs sign-in; /servers shows the link", "server", server)
		return nil
	}
}

// SignInText is the message that gives the user a server's sign-in link,
// for a front end that shows it as text.
func SignInText(server, authURL string) string {
	return fmt.Sprintf("MCP server %q needs you to sign in: open %s\nIts tools join this session once you have signed in; /servers shows the link again.\n", server, authURL)
}

// ServerStateText says what became of a server whose connect ended after
// the session opened (ServerEvents): it connected (signed in), or failed
// and why, for a front end that shows it as text.
func ServerStateText(st bridge.ServerStatus) string {
	switch st.State {
	case bridge.StateConnected:
		return fmt.Sprintf("MCP server %q is connected: %d tools joined the session.\n", st.Name, st.Tools)
	case bridge.StateFailed:
		if errors.Is(st.Err, mcppolicy.ErrRefused) { // signing in again changes nothing
			return fmt.Sprintf("MCP server %q failed: %s.\n", st.Name, gateway.ErrorText(st.Err))
		}
		return fmt.Sprintf("MCP server %q failed: %s; /login %s tries again.\n", st.Name, gateway.ErrorText(st.Err), st.Name)
	}
	return fmt.Sprintf("MCP server %q is %s.\n", st.Name, st.State)
}
