package main

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// progress names the running packages in the order they started, each
// with its running top-level tests longest first; a paused (parallel,
// waiting) test, a subtest and an ended package are not named.
func TestProgress_StillNamesRunningPackagesAndTests(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newProgress(func() time.Time { return now }, "example.com/m/")
	ev := func(action, pkg, test string) string {
		return p.event(fmt.Appendf(nil, `{"Action":%q,"Package":%q,"Test":%q}`, action, pkg, test))
	}
	if got, want := p.still(), "--- 0s: no package running: go test is compiling test binaries"; got != want {
		t.Errorf("still() before any event = %q, want %q", got, want)
	}
	if got := ev("start", "example.com/m/e2e", ""); got != "=== start e2e" {
		t.Errorf("start line = %q", got)
	}
	ev("run", "example.com/m/e2e", "TestSlow")
	now = now.Add(5 * time.Second)
	ev("start", "example.com/m/acp", "")
	ev("run", "example.com/m/e2e", "TestA")
	ev("run", "example.com/m/e2e", "TestB")
	ev("run", "example.com/m/e2e", "TestC")
	ev("run", "example.com/m/e2e", "TestC/sub")
	ev("run", "example.com/m/e2e", "TestWaiting")
	ev("pause", "example.com/m/e2e", "TestWaiting")
	ev("run", "example.com/m/acp", "TestX")
	ev("pass", "example.com/m/acp", "TestX")
	now = now.Add(7 * time.Second)
	want := "--- 12s: still running: e2e 12s (TestSlow 12s, TestA 7s, TestB 7s, +1 more); acp 7s"
	if got := p.still(); got != want {
		t.Errorf("still() =\n%q, want\n%q", got, want)
	}
	if got, want := ev("pass", "example.com/m/acp", ""), "=== end acp: pass in 7s, 1 still running"; got != want {
		t.Errorf("end line = %q, want %q", got, want)
	}
	ev("fail", "example.com/m/e2e", "TestSlow")
	ev("cont", "example.com/m/e2e", "TestWaiting")
	now = now.Add(3 * time.Second)
	want = "--- 15s: still running: e2e 15s (TestA 10s, TestB 10s, TestC 10s, +1 more)"
	if got := p.still(); got != want {
		t.Errorf("still() after acp ended =\n%q, want\n%q", got, want)
	}
	ev("pass", "example.com/m/e2e", "")
	if got, want := p.still(), "--- 15s: no package running: go test is compiling test binaries"; got != want {
		t.Errorf("still() after every package ended = %q, want %q", got, want)
	}
	if got := p.event([]byte("# example.com/m/broken\nnot json")); got != "" {
		t.Errorf("a non-JSON line printed %q", got)
	}
}

// run exits with the test command's status, and fails when only the viewer
// failed; the viewer gets every line of the test command's output.
func TestRun_ExitStatus(t *testing.T) {
	events := `printf '{"Action":"start","Package":"p"}\n{"Action":"pass","Package":"p"}\n'`
	out := t.TempDir() + "/events"
	for _, tc := range []struct {
		name       string
		test, view []string
		want       int
	}{
		{"both pass", []string{"sh", "-c", events}, []string{"sh", "-c", "cat > " + out}, 0},
		{"tests fail", []string{"sh", "-c", events + "; exit 3"}, []string{"sh", "-c", "cat >/dev/null"}, 3},
		{"viewer fails", []string{"sh", "-c", events}, []string{"sh", "-c", "cat >/dev/null; exit 4"}, 1},
		{"viewer exits early", []string{"sh", "-c", events}, []string{"true"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.test, tc.view, time.Hour, ""); got != tc.want {
				t.Errorf("run() = %d, want %d", got, tc.want)
			}
		})
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"Action\":\"start\",\"Package\":\"p\"}\n{\"Action\":\"pass\",\"Package\":\"p\"}\n"; string(got) != want {
		t.Errorf("the viewer read %q, want %q", got, want)
	}
}
