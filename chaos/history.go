package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/statewright/statewright/clients/go/statewright"
	pb "github.com/statewright/statewright/clients/go/statewright/v1"
)

// Outcomes of one invocation, as its caller saw it.
const (
	outcomeOK      = "ok"      // the call returned a response
	outcomeFail    = "fail"    // the server answered an error that means nothing was done
	outcomeUnknown = "unknown" // a deadline, a lost connection, or an error that leaves it open
)

// Op is one invocation and its outcome: one line of a history file. Attempts of one
// logical operation (a request id retried or duplicated) share ID and differ in Try.
type Op struct {
	Proc     string `json:"proc"`
	ID       string `json:"id"`
	Try      int    `json:"try,omitempty"`
	Kind     string `json:"kind"` // start, signal, sws (signal-with-start), resume, cancel, get, complete, fail
	WF       string `json:"wf"`
	Def      string `json:"def,omitempty"`
	Event    string `json:"event,omitempty"`
	RID      string `json:"rid,omitempty"`
	Exp      int64  `json:"exp,omitempty"`      // expected_revision
	Existing bool   `json:"existing,omitempty"` // a start with if_exists RETURN_EXISTING
	Task     int64  `json:"task,omitempty"`     // the task's id: the revision that scheduled it
	TaskID   string `json:"task_id,omitempty"`  // the task's id as the server names it ("3", a map item's "1.2")
	Attempt  int32  `json:"attempt,omitempty"`
	Late     bool   `json:"late,omitempty"`      // sent after the lease ran out, on purpose
	Lease    string `json:"lease,omitempty"`     // the lease token a task call presented (or a poll got)
	LeaseExp int64  `json:"lease_exp,omitempty"` // when that lease runs out (a poll's or a heartbeat's answer), Unix ns
	Key      string `json:"key,omitempty"`       // a lease's concurrency key (a limited queue's task)
	To       int64  `json:"to,omitempty"`        // a reset's target revision
	// A signal or resume sent to land just as a timer of the instance comes due (Unix ns).
	Race    int64  `json:"race,omitempty"`
	Target  string `json:"target"`
	Call    int64  `json:"call"` // Unix nanoseconds
	Ret     int64  `json:"ret"`
	Outcome string `json:"outcome"`
	// What a response said about the instance.
	Rev        int64  `json:"rev,omitempty"`
	State      string `json:"state,omitempty"`
	Status     string `json:"status,omitempty"`
	Last       string `json:"last,omitempty"`
	Prev       string `json:"prev,omitempty"`
	At         int64  `json:"at,omitempty"`
	Ctx        string `json:"ctx,omitempty"` // digest of the whole context
	Due        int64  `json:"due,omitempty"` // the earliest timer the answer shows armed, Unix ns
	Accepted   bool   `json:"accepted,omitempty"`
	Rejection  string `json:"rejection,omitempty"`
	Created    bool   `json:"created,omitempty"` // a start's created, a signal-with-start's started
	TaskStatus string `json:"task_status,omitempty"`
	// A heartbeat's details ({"beat": its id}); a completion's answer: those its task showed.
	Beat string `json:"beat,omitempty"`
	// What an error said.
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	Actual int64  `json:"actual,omitempty"` // REVISION_MISMATCH: the revision the instance was at
	Msg    string `json:"msg,omitempty"`
}

// FaultRec is one fault the nemesis injected, with when it began, ended (healed) and when
// every replica served a write again afterwards.
type FaultRec struct {
	Seq       int               `json:"seq"`
	Kind      string            `json:"kind"`
	Target    string            `json:"target,omitempty"`
	Start     int64             `json:"start"`
	End       int64             `json:"end"`
	GroupEnd  int64             `json:"group_end,omitempty"` // the end of the last fault on with it (overlapping)
	Recovered int64             `json:"recovered,omitempty"`
	Detail    map[string]string `json:"detail,omitempty"`
	Err       string            `json:"err,omitempty"`
}

// WatchRec is one event of a WatchWorkflow watcher: a stream opened, a message received,
// a stream ended or failed.
type WatchRec struct {
	Proc    string `json:"proc"`
	WF      string `json:"wf"`
	Session int    `json:"session"`
	What    string `json:"what"` // open, msg, end, error
	After   int64  `json:"after,omitempty"`
	Rev     int64  `json:"rev,omitempty"`
	Type    string `json:"type,omitempty"`
	State   string `json:"state,omitempty"`
	Status  string `json:"status,omitempty"`
	Last    string `json:"last,omitempty"`
	Ctx     string `json:"ctx,omitempty"`
	Event   string `json:"event,omitempty"`
	Target  string `json:"target,omitempty"`
	Code    string `json:"code,omitempty"`
	T       int64  `json:"t"`
}

// jsonl appends JSON lines to a file, safely from many goroutines, flushing often enough
// that a process killed by its parent loses at most a moment of records.
type jsonl struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	n   int
	err error
}

func createJSONL(path string) (*jsonl, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	j := &jsonl{f: f, w: bufio.NewWriterSize(f, 1<<16)}
	go j.flushEvery(200 * time.Millisecond)
	return j, nil
}

func (j *jsonl) flushEvery(d time.Duration) {
	for {
		time.Sleep(d)
		j.mu.Lock()
		if j.f == nil {
			j.mu.Unlock()
			return
		}
		if err := j.w.Flush(); err != nil && j.err == nil {
			j.err = err
		}
		j.mu.Unlock()
	}
}

func (j *jsonl) write(v any) {
	line, err := json.Marshal(v)
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		if j.err == nil {
			j.err = err
		}
		return
	}
	if j.f == nil {
		return
	}
	j.n++
	j.w.Write(line)
	j.w.WriteByte('\n')
}

func (j *jsonl) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return j.err
	}
	if err := j.w.Flush(); err != nil && j.err == nil {
		j.err = err
	}
	if err := j.f.Close(); err != nil && j.err == nil {
		j.err = err
	}
	j.f = nil
	return j.err
}

// readJSONL decodes every line of path into a new T, in order.
func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	r := bufio.NewReaderSize(f, 1<<20)
	for lineNo := 1; ; lineNo++ {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var v T
			if jerr := json.Unmarshal(line, &v); jerr != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, lineNo, jerr)
			}
			out = append(out, v)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readAll reads every file matching pattern in dir, in name order.
func readAll[T any](dir, pattern string) ([]T, error) {
	paths, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []T
	for _, p := range paths {
		part, err := readJSONL[T](p)
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
	}
	return out, nil
}

// classify turns a failed call's error into the outcome the history records. Only an
// error that the server itself sent (it carries the server's ErrorInfo) with a code that
// means "not done" is a definite failure; anything else (transport failures, deadlines,
// INTERNAL, UNKNOWN) leaves the outcome open.
func classify(op *Op, err error) {
	st, _ := status.FromError(err)
	op.Code = st.Code().String()
	op.Msg = truncate(st.Message(), 200)
	info, fromServer := statewright.ErrorInfo(err)
	if fromServer && info.GetDomain() == statewright.Domain {
		op.Reason = info.GetReason()
		if a := info.GetMetadata()["actual_revision"]; a != "" {
			fmt.Sscan(a, &op.Actual)
		}
	}
	switch {
	case !fromServer:
		op.Outcome = outcomeUnknown
	case st.Code() == codes.Unknown, st.Code() == codes.DeadlineExceeded,
		st.Code() == codes.Internal, st.Code() == codes.Canceled:
		op.Outcome = outcomeUnknown
	default:
		op.Outcome = outcomeFail
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// noteWorkflow records what a response says about the instance.
func noteWorkflow(op *Op, w *pb.Workflow) {
	if w == nil {
		return
	}
	op.Rev = w.GetRevision()
	op.State = w.GetState()
	op.Status = statusName(w.GetStatus())
	ctx := w.GetContext().AsMap()
	op.Last, _ = ctx["last"].(string)
	op.Prev, _ = ctx["prev"].(string)
	if at, ok := ctx["at"].(float64); ok {
		op.At = int64(at)
	}
	op.Ctx = digest(ctx)
	for _, t := range w.GetTimers() {
		if due := t.GetDueTime().AsTime().UnixNano(); op.Due == 0 || due < op.Due {
			op.Due = due
		}
	}
}

// digest names a context by its content: the same fields and values, the same digest,
// whichever way they came (a response's Struct, the database's JSON).
func digest(ctx map[string]any) string {
	if ctx == nil {
		ctx = map[string]any{}
	}
	data, err := json.Marshal(normalise(ctx)) // encoding/json sorts a map's keys
	if err != nil {
		return "unencodable: " + err.Error()
	}
	h := fnv.New64a()
	h.Write(data)
	return fmt.Sprintf("%016x", h.Sum64())
}

// normalise makes every number a float64, as a Struct holds it.
func normalise(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalise(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalise(e)
		}
		return out
	case json.Number:
		f, _ := x.Float64()
		return f
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return v
}

func statusName(s pb.WorkflowStatus) string {
	return strings.TrimPrefix(s.String(), "WORKFLOW_STATUS_")
}

func nowNS() int64 { return time.Now().UnixNano() }
