package logbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Modes, as --audit-log-mode spells them.
const (
	ModeBlocking = "blocking"
	ModeBatch    = "batch"
)

// DefaultBufferSize is --audit-log-batch-buffer-size's default.
const DefaultBufferSize = 10000

// PluginName labels this backend's errors in apiserver_audit_error_total.
const PluginName = "log"

// Options are the --audit-log-* flags.
type Options struct {
	// Path of the log file; "-" writes to Stdout.
	Path string
	// MaxSizeMB rotates the file before it would exceed this many
	// megabytes; 0 means 100, as kube-apiserver's rotation does.
	MaxSizeMB int
	// MaxBackups is how many rotated files to keep (0: all).
	MaxBackups int
	// MaxAgeDays removes rotated files older than this, by the time in their
	// names (0: never).
	MaxAgeDays int
	// Compress gzips rotated files.
	Compress bool
	// Mode is ModeBlocking (the default) or ModeBatch.
	Mode string
	// BufferSize is the batch mode's buffer in events (0: DefaultBufferSize).
	BufferSize int
	// Registerer receives the backend's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Stdout is where "-" writes; nil means os.Stdout.
	Stdout io.Writer
	// Logger reports write errors; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock for rotated files' names; nil means time.Now.
	Now func() time.Time
}

// Backend is an audit.Sink writing JSON lines. Run must be running for
// batch mode to write and for rotated files to be compressed and pruned.
type Backend struct {
	out io.Writer
	rot *rotator // nil for stdout
	// batch carries encoded lines: batch mode encodes on the request's
	// goroutine, so that the one writer goroutine only writes. When the
	// writer encoded, it fell behind under load (a 2-core machine at 3,400
	// renewals/s audited at Metadata wrote about a fifth of the events and
	// dropped the rest: one goroutine's share of the CPU against 64
	// handlers'), and a benchmark of batch mode then measured drops, not
	// auditing.
	batch chan *lineBuffer
	// batchOut is the writer's buffer for one batch (Run's goroutine only).
	batchOut []byte
	// sendMu makes "not stopped, so queue" atomic against Run's stop, so
	// no event is queued after Run's last drain.
	sendMu  sync.RWMutex
	stopped bool
	logger  *slog.Logger
	events  prometheus.Counter
	errors  prometheus.Counter
	bufPool sync.Pool
	writeMu sync.Mutex // orders blocking-mode writes to stdout
}

// New opens the log (creating its directory and file) and registers the
// metrics.
func New(o Options) (*Backend, error) {
	b := &Backend{logger: o.Logger, bufPool: sync.Pool{New: func() any { return new(lineBuffer) }}}
	if b.logger == nil {
		b.logger = slog.Default()
	}
	switch o.Mode {
	case "", ModeBlocking:
	case ModeBatch:
		size := o.BufferSize
		if size == 0 {
			size = DefaultBufferSize
		}
		if size < 0 {
			return nil, fmt.Errorf("audit log batch buffer size %d: must be positive", size)
		}
		b.batch = make(chan *lineBuffer, size)
	default:
		return nil, fmt.Errorf("audit log mode %q: want %s or %s", o.Mode, ModeBlocking, ModeBatch)
	}
	if o.MaxSizeMB < 0 || o.MaxBackups < 0 || o.MaxAgeDays < 0 {
		return nil, errors.New("audit log maxsize, maxbackup and maxage must not be negative")
	}
	b.events = prometheus.NewCounter(prometheus.CounterOpts{Name: "apiserver_audit_event_total",
		Help: "Counter of audit events generated and sent to the audit backend."})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_audit_error_total",
		Help: "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error."},
		[]string{"plugin"})
	b.errors = errs.WithLabelValues(PluginName)
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{b.events, errs} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("registering audit metrics: %w", err)
			}
		}
	}
	if o.Path == "-" {
		b.out = o.Stdout
		if b.out == nil {
			b.out = os.Stdout
		}
		return b, nil
	}
	if o.Path == "" {
		return nil, errors.New("audit log path is empty")
	}
	maxSize := int64(o.MaxSizeMB) << 20
	if maxSize == 0 {
		maxSize = 100 << 20
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	rot, err := openRotator(o.Path, maxSize, o.MaxBackups, time.Duration(o.MaxAgeDays)*24*time.Hour, o.Compress, now)
	if err != nil {
		return nil, err
	}
	b.rot, b.out = rot, rot
	return b, nil
}

// ProcessEvents writes the events (blocking mode) or encodes and queues
// them (batch mode, never blocking; a full buffer drops the event). It reports whether
// every event was written or queued.
func (b *Backend) ProcessEvents(events ...*auditv1.Event) bool {
	ok := true
	for _, ev := range events {
		b.events.Inc()
		if b.batch == nil {
			ok = b.write(ev) && ok
			continue
		}
		line := b.bufPool.Get().(*lineBuffer)
		var err error
		if line.b, err = appendEvent(line.b[:0], ev); err != nil {
			b.bufPool.Put(line)
			b.errors.Inc()
			b.logger.Error("encoding audit event", "auditID", ev.AuditID, "stage", ev.Stage, "err", err)
			ok = false
			continue
		}
		if !b.enqueue(line) {
			b.bufPool.Put(line)
			b.errors.Inc()
			ok = false
		}
	}
	return ok
}

// enqueue queues an encoded line unless the buffer is full or Run has
// stopped.
func (b *Backend) enqueue(line *lineBuffer) bool {
	b.sendMu.RLock()
	defer b.sendMu.RUnlock()
	if b.stopped {
		return false
	}
	select {
	case b.batch <- line:
		return true
	default:
		return false
	}
}

// write encodes ev as one line and writes it with one call.
func (b *Backend) write(ev *auditv1.Event) bool {
	buf := b.bufPool.Get().(*lineBuffer)
	defer b.bufPool.Put(buf)
	var err error
	buf.b, err = appendEvent(buf.b[:0], ev) // one line, newline-terminated
	if err == nil {
		if b.rot == nil {
			b.writeMu.Lock()
			_, err = b.out.Write(buf.b)
			b.writeMu.Unlock()
		} else {
			_, err = b.out.Write(buf.b)
		}
	}
	if err != nil {
		b.errors.Inc()
		b.logger.Error("writing audit event", "auditID", ev.AuditID, "stage", ev.Stage, "err", err)
		return false
	}
	return true
}

// Batch mode writes what has queued up in one call, up to these limits.
// Measured on a loaded 2-core machine: writing one small event took
// 45.5 µs (BenchmarkWrite/blocking), of which encoding was 9.7 µs with
// encoding/json (BenchmarkEncode), so the write(2) per event, not the
// encoding, was most of a batch-mode backend's CPU; under load the queue
// holds dozens of events. The byte limit keeps a batch well under the
// smallest rotation size (1 MB).
const (
	maxBatchEvents = 512
	maxBatchBytes  = 256 << 10
)

// writeBatch writes first and whatever else is queued (within the limits)
// as consecutive lines with one write.
func (b *Backend) writeBatch(first *lineBuffer) {
	out := b.batchOut[:0]
	n := 0
	for line := first; line != nil; {
		out = append(out, line.b...)
		b.bufPool.Put(line)
		n++
		line = nil
		if n < maxBatchEvents && len(out) < maxBatchBytes {
			select {
			case line = <-b.batch:
			default:
			}
		}
	}
	if cap(out) <= 2*maxBatchBytes {
		b.batchOut = out
	}
	if _, err := b.out.Write(out); err != nil {
		b.errors.Add(float64(n))
		b.logger.Error("writing audit events", "events", n, "err", err)
	}
}

// lineBuffer is a pooled buffer for encoded lines.
type lineBuffer struct{ b []byte }

// Run writes batched events and compresses and prunes rotated files until
// ctx ends; then it writes what the buffer still holds (events arriving
// later are dropped and counted) and returns. Stop the request path before
// cancelling ctx so no event is dropped.
func (b *Backend) Run(ctx context.Context) {
	var rotated chan struct{}
	if b.rot != nil {
		rotated = b.rot.rotated
	}
	for {
		select {
		case line := <-b.batch: // nil channel in blocking mode: never ready
			b.writeBatch(line)
		case <-rotated:
			if err := b.rot.housekeep(); err != nil {
				b.logger.Error("audit log housekeeping", "err", err)
			}
		case <-ctx.Done():
			b.sendMu.Lock()
			b.stopped = true
			b.sendMu.Unlock()
			for {
				select {
				case line := <-b.batch:
					b.writeBatch(line)
				default:
					return
				}
			}
		}
	}
}

// Close closes the log file. Call it after Run has returned.
func (b *Backend) Close() error {
	if b.rot == nil {
		return nil
	}
	return b.rot.Close()
}
