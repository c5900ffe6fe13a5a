package acp

import "golang.org/x/time/rate"

// The agent paces the session/update notifications of replays (session/load
// of a stored transcript), over the whole connection: up to notifyBurst back
// to back, then at most notifyRate a second. ACP has no flow control for
// notifications, and a client may queue them in bounded memory: acp-go-sdk's
// client side reads every frame at once, queues at most 1,024 notifications
// not yet handled, and closes the connection when one more arrives. Unpaced,
// a session/load replaying a long transcript (five notifications a turn)
// outran such a client. Paced, a client that handles notifications at
// notifyRate a second on average never has more than notifyBurst queued,
// plus what arrives while it stalls: a stall of up to
// (1024-notifyBurst)/notifyRate = 512 ms is absorbed. A 500-turn transcript
// (2,500 updates) takes about 1.7 s. The rate was 5,000 a second (half a
// second for that transcript) until a client short of CPU (race detector,
// two test runs on two cores) handled fewer than 3,000 a second and lost
// its connection in 1 load of 4; at 2,000 such a client still lost it in
// about 1 run of 6 (e2e TestReplay_BusyClientKeepsConnection), and 1,500
// leaves it a third more time. Live turns are not paced: each sends its
// updates as they happen, at the pace of its model and tools, and a pacer
// shared by every session capped 500 concurrent sessions at about 2,500
// calls a second, each waiting about 200 ms.
const (
	notifyBurst = 256
	notifyRate  = 1500
)

// newNotifyPacer returns the token bucket replayed notifications wait on
// (conn.notifyPaced); it is safe for concurrent use.
func newNotifyPacer() *rate.Limiter { return rate.NewLimiter(notifyRate, notifyBurst) }
