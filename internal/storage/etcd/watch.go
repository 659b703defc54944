package etcd

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/storage"
)

// watchOutBuffer lets the forwarding goroutine pass on etcd's responses,
// each one batch, without waiting on the caller for each.
const watchOutBuffer = 16

// Watch implements storage.Interface with an etcd watch from fromRevision+1
// with previous values (see the package doc for how compaction is reported).
// Each etcd watch response is one batch.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64, opts ...storage.WatchOption) (<-chan []storage.Event, error) {
	ek, err := s.keys.toEtcd(prefix)
	if err != nil {
		return nil, err
	}
	if fromRevision < 0 {
		return nil, fmt.Errorf("etcd: watch %s from negative revision %d", prefix, fromRevision)
	}
	if err := s.checkNotCompacted(ctx, prefix, fromRevision); err != nil {
		return nil, err
	}
	if err := s.acquire(); err != nil {
		return nil, err
	}
	// The forwarding goroutine owns this acquire and releases it on exit;
	// its watch context ends with the caller's or with Close.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	stopOnClose := context.AfterFunc(s.closing, cancel)
	eopts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(fromRevision + 1)}
	// The previous key-value is what a delete's tombstone lacks (the
	// deleted value and its CreateRevision). Asking for it makes etcd read
	// the previous revision of every changed key and send it along, twice
	// the bytes per event: the watch cache, which keeps every previous
	// state itself, does not.
	if storage.WantsPrevValue(opts) {
		eopts = append(eopts, clientv3.WithPrevKV())
	}
	progress := storage.WantsProgress(opts) && s.progressOK(ctx)
	if progress {
		eopts = append(eopts, clientv3.WithProgressNotify())
	}
	wch := s.client.Watch(wctx, ek, eopts...)
	out := make(chan []storage.Event, watchOutBuffer)
	go func() {
		defer s.release()
		defer close(out)
		defer cancel()
		defer stopOnClose()
		s.forward(wctx, prefix, wch, out, progress)
	}()
	return out, nil
}

// checkNotCompacted fails with storage.ErrCompacted when fromRevision is
// older than the last compaction, as the embedded driver does: a Range at
// fromRevision fails exactly then. A fromRevision not written yet cannot be
// compacted; the watch simply waits for it.
func (s *Store) checkNotCompacted(ctx context.Context, prefix string, fromRevision int64) error {
	if fromRevision == 0 {
		fromRevision = 1
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	_, err := s.client.Get(ctx, s.keys.prefix, clientv3.WithCountOnly(), clientv3.WithRev(fromRevision))
	err = wrap(fmt.Sprintf("etcd: watch %s from revision %d", prefix, fromRevision), err)
	if err != nil && !isFuture(err) {
		return err
	}
	return nil
}

// forward converts etcd's responses into events until the watch ends;
// with progress, etcd's progress notifications become EventProgress.
func (s *Store) forward(ctx context.Context, prefix string, wch clientv3.WatchChan, out chan<- []storage.Event, progress bool) {
	log := s.log.With("prefix", prefix)
	for {
		var wr clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return
		case wr, ok = <-wch:
		}
		if !ok {
			return
		}
		if wr.CompactRevision != 0 {
			log.Warn("watch overtaken by compaction; the caller must re-watch", "compactRevision", wr.CompactRevision)
			s.noteCompacted(wr.CompactRevision)
			return
		}
		if err := wr.Err(); err != nil {
			if ctx.Err() == nil {
				log.Warn("etcd ended the watch; the caller must re-watch", "err", err)
			}
			return
		}
		if wr.IsProgressNotify() {
			// Every event of this watch up to the header's revision has
			// been delivered (etcd sends progress only to a watch that
			// has caught up; progressOK checked the version that
			// guarantees it). Without progress it is only noise: etcd
			// answers RequestProgress on every watch of the stream.
			if progress {
				select {
				case out <- []storage.Event{{Type: storage.EventProgress, Revision: wr.Header.Revision}}:
				case <-ctx.Done():
					return
				}
			}
			continue
		}
		if len(wr.Events) == 0 {
			continue
		}
		batch := make([]storage.Event, len(wr.Events))
		for i, ev := range wr.Events {
			batch[i] = s.toEvent(ev)
		}
		select {
		case out <- batch:
		case <-ctx.Done():
			return
		}
	}
}

func (s *Store) toEvent(ev *clientv3.Event) storage.Event {
	e := storage.Event{Key: s.keys.fromEtcd(ev.Kv.Key), Revision: ev.Kv.ModRevision}
	if ev.Type == mvccpb.DELETE {
		// etcd's tombstone carries only the key and the delete's revision;
		// the deleted life is in the previous value.
		e.Type = storage.EventDelete
		if ev.PrevKv != nil {
			e.PrevValue = nonNil(ev.PrevKv.Value)
			e.CreateRevision = ev.PrevKv.CreateRevision
		}
		return e
	}
	e.Type = storage.EventPut
	e.Value = nonNil(ev.Kv.Value)
	e.CreateRevision = ev.Kv.CreateRevision
	if !ev.IsCreate() && ev.PrevKv != nil {
		e.PrevValue = nonNil(ev.PrevKv.Value)
	}
	return e
}
