package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/remote"
	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

const fleetBenchToken = "fleet-bench-token-0123456789"

// fleetTranslator is one translator connection to a replica, set up as the
// translator's main does with --gateway URL --store gateway: its History
// writes each finished turn behind into the fleet's store through the
// sessions extension, fenced by the turn's lease. Warnings and errors of the
// client and the History (a failed commit) land in logs.
type fleetTranslator struct {
	r    *remote.Client
	h    *session.History
	logs *testutil.Buffer
}

func dialFleet(b *testing.B, url string) *fleetTranslator {
	b.Helper()
	logs := &testutil.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := remote.Dial(ctx, &remote.ClientOptions{URLs: []string{url}, Token: fleetBenchToken, Logger: log,
		Info: remote.PeerInfo{Name: "fleet-bench", Version: "1"}, Extensions: map[string]int{remote.ExtSessions: remote.ExtSessionsVersion}})

	if err != nil {
		b.Fatalf("dialing replica %s: %v", url, err)
	}
	b.Cleanup(func() { r.Close() })
	h := session.NewHistory(r.Store(), log)
	r.SetHistory(h)
	b.Cleanup(func() { h.Close() }) // before r.Close: commits written behind
	return &fleetTranslator{r: r, h: h, logs: logs}
}

// fleetSession is one translator session: its stored id and key, the
// translator connection it runs on, and its own Go fixture MCP server.
type fleetSession struct {
	t       *fleetTranslator
	id, key string
	replica int
}

// benchSessions is ACP_BENCH_SESSIONS, else def.
func benchSessions(b *testing.B, def int) int {
	v := os.Getenv("ACP_BENCH_SESSIONS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("ACP_BENCH_SESSIONS=%q: want a positive integer", v)
	}
	return n
}

// machineIdle is the idle time of all of the machine's CPUs so far, and
// their total time, from /proc/stat, in clock ticks.
func machineIdle(b *testing.B) (idle, total int64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseInt(f, 10, 64)
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return idle, total
}

// percentile returns the p-th percentile (0..100) of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// BenchmarkFleet (issue 17): two gateway replicas on one PostgreSQL store,
// ACP_BENCH_SESSIONS sessions per replica (default 500), each with its own
// Go fixture MCP server process over stdio behind a bridge.Manager, over 10
// translator connections per replica (--store gateway: the sessions
// extension, a fleet-wide lease per turn, each turn committed behind,
// fenced). Each iteration runs one `/call mcp__fx__echo` turn in every
// session at once; it reports turns/s per replica and the p50/p99 latency
// of a turn. Then, for 50 sessions, 100 turns are written through replica 1
// and the store side of session/load (sessions.get + sessions.turns, what
// the translator's session/load reads) is timed through replica 2: load
// p50/p99. Also the replicas' RSS per session and CPU per turn (on a small
// machine everything shares the CPUs: turns/s is then the machine's, and
// replica-cpu-us/turn says what a replica would do on cores of its own).
// Any error fails it. Run it with -count 1: the sandbox's sweep kills the
// test binary's PostgreSQL when the last MCP server closes (see below).
func BenchmarkFleet(b *testing.B) {
	const (
		replicas  = 2
		conns     = 10  // translator connections per replica
		loads     = 50  // sessions loaded through the other replica
		loadTurns = 100 // turns each of them holds
		loadReps  = 5   // timed loads of each
		opening   = 16  // sessions opened at once
	)
	perReplica := benchSessions(b, 500)
	cwd := b.TempDir()
	sessions := make([]fleetSession, replicas*perReplica)
	managers := make([]*bridge.Manager, len(sessions))
	// The MCP servers close last, after the replicas and the database: when
	// the last server started by sandbox.Start is reaped, the sandbox's
	// sweep SIGKILLs every other child of this process as an adopted
	// orphan, the gateways and the PostgreSQL postmaster included.
	b.Cleanup(func() {
		var wg sync.WaitGroup
		sem := make(chan struct{}, opening)
		for _, m := range managers {
			if m == nil {
				continue
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				if err := m.Close(cctx); err != nil {
					b.Errorf("closing a session's MCP server: %v", err)
				}
			})
		}
		wg.Wait()
	})
	tokens := filepath.Join(b.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("bench "+fleetBenchToken+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	dbURL := pgtest.Start(b)
	var gws []*gatewayProc
	for i := range replicas {
		gws = append(gws, startGateway(b, "", nil, "--model", "direct", "--store", dbURL, "--tokens-file", tokens,
			"--replica-name", fmt.Sprintf("replica-%d", i+1)))
	}
	ctx := context.Background()
	rss0 := make([]int, replicas)
	var translators [replicas][]*fleetTranslator
	// translatorLogs is what the translators logged (warnings and errors).
	translatorLogs := func() string {
		var all strings.Builder
		for _, ts := range translators {
			for _, t := range ts {
				all.WriteString(t.logs.String())
			}
		}
		return all.String()
	}
	b.Cleanup(func() {
		if b.Failed() {
			if s := translatorLogs(); s != "" {
				b.Logf("the translators logged:\n%s", s)
			}
		}
	})
	for i, g := range gws {
		for range conns {
			translators[i] = append(translators[i], dialFleet(b, g.url()))
		}
		rss0[i] = rssKiB(b, g.cmd.Process.Pid)
	}

	// Open the sessions, as session/new does: connect the MCP server,
	// create the record, attach the History, register the tools.
	opened := time.Now()
	var g errgroup.Group
	g.SetLimit(opening)
	for i := range sessions {
		replica, j := i/perReplica, i%perReplica
		t := translators[replica][j%conns]
		id := fmt.Sprintf("fleet-%d-%d", replica+1, j)
		s := fleetSession{t: t, id: id, key: "acp:" + id, replica: replica}
		sessions[i] = s
		g.Go(func() error {
			octx, cancel := context.WithTimeout(ctx, 120*time.Second)
			defer cancel()
			m := bridge.NewManager(&bridge.Options{Cwd: cwd})
			managers[i] = m
			if err := m.Connect(octx, []bridge.ServerSpec{{Name: "fx", Transport: bridge.TransportStdio, Command: fixtureBin}}); err != nil {
				return fmt.Errorf("session %s: connecting its fixture server: %w", id, err)
			}
			if st := m.Servers()[0]; st.State != bridge.StateConnected {
				return fmt.Errorf("session %s: fixture server %s: %v", id, st.State, st.Err)
			}
			now := time.Now()
			if err := t.r.Store().Create(octx, store.Record{ID: id, Key: s.key, Cwd: cwd, Created: now, Updated: now,
				Servers: []store.Server{{Name: "fx", Transport: "stdio"}}}); err != nil {
				return fmt.Errorf("session %s: create: %w", id, err)
			}
			if _, err := t.h.Attach(octx, s.key, id); err != nil {
				return fmt.Errorf("session %s: attach: %w", id, err)
			}
			if err := t.r.SetExtraTools(octx, s.key, m.Tools()); err != nil {
				return fmt.Errorf("session %s: registering its tools: %w", id, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	b.Logf("opened %d sessions (%d per replica, each with a fixture process) in %v", len(sessions), perReplica, time.Since(opened).Round(time.Millisecond))
	rss1 := make([]int, replicas)
	for i, g := range gws {
		rss1[i] = rssKiB(b, g.cmd.Process.Pid)
	}

	// Turns: one /call turn in every session at once, per iteration.
	var mu sync.Mutex
	var lat []time.Duration
	var turns [replicas]int
	var failures []string
	iterations := 0
	// Each iteration's turns are committed before the next prompt of the
	// session, as when a person types it: ACP_BENCH_BACK_TO_BACK=1 sends it
	// at once instead, racing the previous turn's commit (written behind)
	// with the next turn's lease, which fences that commit out.
	backToBack := os.Getenv("ACP_BENCH_BACK_TO_BACK") == "1"
	cpu0 := make([]time.Duration, replicas+1) // the replicas', then this process's
	for i, g := range gws {
		cpu0[i] = cpuTime(b, g.cmd.Process.Pid)
	}
	cpu0[replicas] = cpuTime(b, os.Getpid())
	idle0, total0 := machineIdle(b)
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		iterations++
		var wg sync.WaitGroup
		for _, s := range sessions {
			wg.Go(func() {
				tctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				defer cancel()
				t0 := time.Now()
				stop, err := s.t.r.Send(tctx, gateway.SendRequest{SessionKey: s.key, RunID: fmt.Sprintf("%s-%d", s.key, i),
					Message: []gateway.Content{gateway.TextContent(fmt.Sprintf(`/call mcp__fx__echo {"message":"turn %d of %s"}`, i, s.id))}},
					func(gateway.Event) {})
				d := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				lat = append(lat, d)
				turns[s.replica]++
				if err != nil || stop != gateway.StopEndTurn {
					failures = append(failures, fmt.Sprintf("%s turn %d: %s, %v", s.id, i, stop, err))
				}
			})
		}
		wg.Wait()
		if !backToBack {
			for _, ts := range translators {
				for _, t := range ts {
					fctx, cancel := context.WithTimeout(ctx, 120*time.Second)
					err := t.h.Flush(fctx)
					cancel()
					if err != nil {
						b.Fatalf("waiting for the turns' commits: %v", err)
					}
				}
			}
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := make([]time.Duration, replicas+1)
	for i, g := range gws {
		cpu[i] = cpuTime(b, g.cmd.Process.Pid) - cpu0[i]
	}
	cpu[replicas] = cpuTime(b, os.Getpid()) - cpu0[replicas]
	idle1, total1 := machineIdle(b)
	if len(failures) > 0 {
		b.Fatalf("%d of %d turns failed, such as: %s", len(failures), len(lat), strings.Join(failures[:min(5, len(failures))], "; "))
	}
	// Every turn ran the tool and was committed to the fleet's store.
	var check errgroup.Group
	check.SetLimit(opening)
	for _, s := range sessions {
		check.Go(func() error {
			cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			msgs, _ := json.Marshal(s.t.h.View(cctx, s.key).Messages)
			if want := fmt.Sprintf("Echo: turn %d of %s", iterations-1, s.id); !strings.Contains(string(msgs), want) {
				return fmt.Errorf("session %s: the last turn's conversation lacks %q: %s", s.id, want, msgs)
			}
			return nil
		})
	}
	if err := check.Wait(); err != nil {
		b.Fatal(err)
	}
	for _, ts := range translators {
		for _, t := range ts {
			fctx, cancel := context.WithTimeout(ctx, 120*time.Second)
			err := t.h.Flush(fctx)
			cancel()
			if err != nil {
				b.Fatalf("flushing the turns' commits: %v", err)
			}
		}
	}
	for _, s := range sessions {
		check.Go(func() error {
			cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			got, err := s.t.r.Store().Turns(cctx, s.id)
			if err != nil || len(got) != iterations {
				return fmt.Errorf("session %s: %d turns in the store, want %d (%v)", s.id, len(got), iterations, err)
			}
			return nil
		})
	}
	if err := check.Wait(); err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds()/replicas, "turns/s/replica")
	b.ReportMetric(float64(percentile(lat, 50).Microseconds()), "turn-p50-us")
	b.ReportMetric(float64(percentile(lat, 99).Microseconds()), "turn-p99-us")
	b.Logf("turns per replica: %v in %v; CPU used by the replicas %v, by the translators and bridges (this process) %v; the machine's CPUs %.0f%% idle meanwhile",
		turns, elapsed.Round(time.Millisecond), cpu[:replicas], cpu[replicas], 100*float64(idle1-idle0)/float64(max(1, total1-total0)))
	b.ReportMetric(float64((cpu[0]+cpu[1]).Microseconds())/float64(len(lat)), "replica-cpu-us/turn")
	var rss float64
	for i := range gws {
		rss += float64(rss1[i]-rss0[i]) / float64(perReplica)
	}
	b.ReportMetric(rss/replicas, "replica-KiB/session")

	// Loads: sessions of loadTurns turns written through replica 1, loaded
	// through replica 2.
	w, rd := translators[0][0], translators[1][0]
	turn := func(k int) store.Turn {
		return store.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{
			{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(fmt.Sprintf("prompt %d: %s", k, strings.Repeat("words ", 20)))}},
			{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(fmt.Sprintf("answer %d: %s", k, strings.Repeat("more words ", 30)))}},
		}}
	}
	written := time.Now()
	for l := range loads {
		g.Go(func() error {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()
			id := fmt.Sprintf("fleet-load-%d", l)
			now := time.Now()
			if err := w.r.Store().Create(wctx, store.Record{ID: id, Key: "acp:" + id, Cwd: cwd, Created: now, Updated: now}); err != nil {
				return fmt.Errorf("session %s: create through replica 1: %w", id, err)
			}
			for k := range loadTurns {
				if err := w.r.Store().AppendTurn(wctx, id, turn(k)); err != nil {
					return fmt.Errorf("session %s: turn %d through replica 1: %w", id, k, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %d sessions of %d turns through replica 1 in %v", loads, loadTurns, time.Since(written).Round(time.Millisecond))
	var loadLat []time.Duration
	lastAnswer := gateway.PromptText(turn(loadTurns - 1).Messages[1].Content)
	for range loadReps {
		for l := range loads {
			id := fmt.Sprintf("fleet-load-%d", l)
			lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			t0 := time.Now()
			rec, err := rd.r.Store().Get(lctx, id)
			var got []store.Turn
			if err == nil {
				got, err = rd.r.Store().Turns(lctx, id)
			}
			loadLat = append(loadLat, time.Since(t0))
			cancel()
			if err != nil || rec.ID != id || len(got) != loadTurns || gateway.PromptText(got[loadTurns-1].Messages[1].Content) != lastAnswer {
				b.Fatalf("session/load of %s through replica 2: record %q, %d turns (want %d), %v", id, rec.ID, len(got), loadTurns, err)
			}
		}
	}
	slices.Sort(loadLat)
	b.ReportMetric(float64(percentile(loadLat, 50).Microseconds())/1000, "load-p50-ms")
	b.ReportMetric(float64(percentile(loadLat, 99).Microseconds())/1000, "load-p99-ms")

	if s := translatorLogs(); s != "" {
		b.Fatalf("the translators logged warnings or errors:\n%s", s)
	}
}
