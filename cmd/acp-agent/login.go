package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
)

// keyCheckTimeout bounds the request that checks a key at login.
const keyCheckTimeout = 30 * time.Second

// signInMethodID is the id of the ACP auth method that runs "acp-agent login".
const signInMethodID = "acp-agent-login"

// loginIO is the terminal of "acp-agent login": lines are read through one
// buffered reader (so that a script can pipe every answer), the key without
// echo when stdin is a terminal.
type loginIO struct {
	in     *bufio.Reader
	fd     int // stdin's descriptor when it is a terminal, else -1
	out    io.Writer
	getenv func(string) string
}

func newLoginIO(stdin io.Reader, out io.Writer) *loginIO {
	l := &loginIO{in: bufio.NewReader(stdin), fd: -1, out: out, getenv: os.Getenv}
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		l.fd = int(f.Fd())
	}
	return l
}

// ask prints prompt and reads one line, trimmed; at EOF with nothing read
// it fails naming what was asked.
func (l *loginIO) ask(prompt, what string) (string, error) {
	fmt.Fprint(l.out, prompt)
	line, err := l.in.ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("login: no %s given (stdin ended)", what)
		}
		return "", fmt.Errorf("login: reading the %s: %w", what, err)
	}
	return strings.TrimSpace(line), nil
}

// askSecret reads the key: without echo on a terminal, else as a line.
func (l *loginIO) askSecret(prompt, what string) (string, error) {
	if l.fd < 0 {
		return l.ask(prompt, what)
	}
	fmt.Fprint(l.out, prompt)
	b, err := term.ReadPassword(l.fd)
	fmt.Fprintln(l.out)
	if err != nil {
		return "", fmt.Errorf("login: reading the %s: %w", what, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// runLogin is "acp-agent login [provider]": it asks for the provider
// (default: the config's model provider, else the first one) and its API
// key (hidden on a terminal; one line per answer when stdin is not a
// terminal), checks the key with one cheap request (a 401 refuses it;
// no answer, such as offline, asks whether to store it anyway), and
// stores it in the credentials file (0600). Prompts and results go to out;
// the key is never printed or logged.
func runLogin(args []string, stdin io.Reader, out, stderr io.Writer, creds *credentials) error {
	fs := flag.NewFlagSet("acp-agent login", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned (main prints them once), help goes to out
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: acp-agent login [flags] [%s]\n\nStores a model API key in %s (mode 0600); acp-agent uses it when the key's environment variable is not set.\n\nFlags:\n", strings.Join(eachProvider(func(p modelProvider) string { return p.id }), "|"), creds.path)
		printFlags(out, fs)
	}
	config := fs.String("config", "", "config file whose model.provider and model.baseURL are the defaults (default $XDG_CONFIG_HOME/acp-agent/config.json)")
	baseURL := fs.String("base-url", "", "check the key against this API base URL (default: the config's model.baseURL, OPENAI_BASE_URL for openai, else the provider's API)")
	noCheck := fs.Bool("no-check", false, "store the key without checking it")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return flagError(fs, err, "acp-agent login")
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("login: want at most one argument, the provider (%s); got %q", providerIDs(), fs.Args())
	}
	path := *config
	if path == "" {
		path = defaultConfigPath()
	}
	cfg, err := loadConfig(path, *config != "")
	if err != nil {
		return err
	}
	l := newLoginIO(stdin, out)
	def := providers[0].id
	if cfg.Model != nil {
		if _, ok := lookupProvider(cfg.Model.Provider); ok {
			def = cfg.Model.Provider
		}
	}
	id := fs.Arg(0)
	if id == "" {
		if id, err = l.ask(fmt.Sprintf("Provider (%s) [%s]: ", providerIDs(), def), "provider"); err != nil {
			return err
		}
		if id == "" {
			id = def
		}
	}
	p, ok := lookupProvider(id)
	if !ok {
		return fmt.Errorf("login: provider %q: want %s", id, providerIDs())
	}
	_, keyEnv := p.envKey(l.getenv)
	if cfg.Model != nil && cfg.Model.Provider == p.id && cfg.Model.APIKeyEnv != "" {
		keyEnv = cfg.Model.APIKeyEnv
	}
	key, err := l.askSecret(fmt.Sprintf("%s API key (input hidden): ", p.label), "API key")
	if err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("login: the API key is empty; nothing stored")
	}
	if !*noCheck {
		opts := provider.Options{APIKey: key, APIKeyEnv: keyEnv, BaseURL: *baseURL}
		if opts.BaseURL == "" && cfg.Model != nil && cfg.Model.Provider == p.id {
			opts.BaseURL = cfg.Model.BaseURL
		}
		if opts.BaseURL == "" && p.baseURLEnv != "" {
			opts.BaseURL = l.getenv(p.baseURLEnv)
		}
		if ok, err := checkLoginKey(p, opts, l); err != nil || !ok {
			return err
		}
	}
	if err := creds.store(p.id, key); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	fmt.Fprintf(out, "Stored the %s API key in %s (mode 0600).\n", p.label, creds.path)
	if l.getenv(keyEnv) != "" {
		fmt.Fprintf(out, "Note: %s is set in this environment; where it is set, it wins over the stored key.\n", keyEnv)
	} else {
		fmt.Fprintf(out, "acp-agent uses it whenever %s is not set.\n", keyEnv)
	}
	return nil
}

// checkLoginKey checks key with one request. It returns true to store the
// key: it was accepted, or the check failed without an answer about the
// key and the user says to store it anyway. A key the API refuses (401) is
// an error.
func checkLoginKey(p modelProvider, opts provider.Options, l *loginIO) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), keyCheckTimeout)
	defer cancel()
	err := p.checkKey(ctx, opts)
	if err == nil {
		fmt.Fprintf(l.out, "The %s API accepted the key.\n", p.label)
		return true, nil
	}
	var pe *provider.Error
	if errors.As(err, &pe) && pe.Status == http.StatusUnauthorized {
		return false, fmt.Errorf("login: the %s API refused the key (HTTP 401%s); nothing stored", p.label, apiMessage(pe))
	}
	// What to do (a provider.Error's Hint) after the error, as in a turn's failure.
	fmt.Fprintf(l.out, "Could not check the key: %s\n", gateway.ErrorText(err))
	answer, aerr := l.ask("Store it anyway? [y/N]: ", "answer")
	if aerr != nil {
		return false, aerr
	}
	if a := strings.ToLower(answer); a != "y" && a != "yes" {
		return false, errors.New("login: the key was not checked; nothing stored (run again when online, or use --no-check)")
	}
	fmt.Fprintln(l.out, "Warning: storing a key that was not checked; a wrong key shows as HTTP 401 at the first prompt.")
	return true, nil
}

func apiMessage(pe *provider.Error) string {
	if pe.Message == "" {
		return ""
	}
	return ": " + pe.Message
}

// runLogout is "acp-agent logout [provider]": it removes the stored key of
// provider, or every stored key. Keys in the environment are untouched.
func runLogout(args []string, out, stderr io.Writer, creds *credentials) error {
	fs := flag.NewFlagSet("acp-agent logout", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned (main prints them once), help goes to out
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: acp-agent logout [%s]\n\nRemoves the API key stored by \"acp-agent login\" for one provider, or every stored key, from %s.\n", strings.Join(eachProvider(func(p modelProvider) string { return p.id }), "|"), creds.path)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return flagError(fs, err, "acp-agent logout")
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("logout: want at most one argument, the provider (%s); got %q", providerIDs(), fs.Args())
	}
	id := fs.Arg(0)
	if _, ok := lookupProvider(id); id != "" && !ok {
		return fmt.Errorf("logout: provider %q: want %s", id, providerIDs())
	}
	removed, err := creds.remove(id)
	if err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	what := "every stored API key"
	if id != "" {
		what = "the stored " + id + " API key"
	}
	if !removed {
		fmt.Fprintf(out, "No stored API key to remove (%s).\n", creds.path)
		return nil
	}
	fmt.Fprintf(out, "Removed %s (%s).\n", what, creds.path)
	return nil
}

// newSignIn returns the agent's ACP sign-in: the terminal method that runs
// "acp-agent login", the check authenticate makes (the configured model has
// a key, or any provider has one), ACP logout (every stored key), and the
// notice of a missing key for new sessions. primary is the configured
// model (nil: none).
func newSignIn(primary *ModelConfig, getenv func(string) string, creds *credentials) *acp.SignIn {
	exe, _ := os.Executable()
	notice := func() string { return missingKey(primary, getenv, creds) }
	return &acp.SignIn{
		MethodID:    signInMethodID,
		Name:        "Sign in with a model API key",
		Description: fmt.Sprintf("Runs %q: asks for the provider (%s) and its API key, checks the key and stores it in %s (mode 0600).", provider.LoginCommand, providerIDs(), creds.path),
		Args:        []string{"login"},
		Command:     exe,
		Check: func() error {
			if n := notice(); n != "" {
				return errors.New(n)
			}
			for _, p := range providers {
				if key, _ := p.envKey(getenv); key != "" || creds.key(p.id) != "" {
					return nil
				}
			}
			if primary != nil && primary.Provider != "" {
				return nil // direct mode, or a base URL that needs no key
			}
			return fmt.Errorf("no model API key: set %s, or run %q", orList(eachProvider(func(p modelProvider) string { return p.keyEnv })), provider.LoginCommand)
		},
		Logout: func() error { _, err := creds.remove(""); return err },
		Notice: notice,
	}
}
