package etcd

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/storage"
)

// Get implements storage.Interface with a linearizable read.
func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	ek, err := s.keys.toEtcd(key)
	if err != nil {
		return storage.KeyValue{}, err
	}
	if err := s.acquire(); err != nil {
		return storage.KeyValue{}, err
	}
	defer s.release()
	cctx, cancel := s.callContext(ctx)
	defer cancel()
	resp, err := s.client.Get(cctx, ek)
	if err != nil {
		return storage.KeyValue{}, s.fail(ctx, "etcd: get "+key, false, err)
	}
	if len(resp.Kvs) == 0 {
		return storage.KeyValue{}, fmt.Errorf("etcd: get %s: %w", key, storage.ErrNotFound)
	}
	return s.toKeyValue(resp.Kvs[0]), nil
}

// List implements storage.Interface with one range read [from, end of
// prefix), at opts.Revision when set.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	start, err := s.keys.toEtcd(prefix)
	if err != nil {
		return storage.ListResult{}, err
	}
	if opts.Revision < 0 || opts.Limit < 0 {
		return storage.ListResult{}, fmt.Errorf("etcd: list %s: negative revision %d or limit %d", prefix, opts.Revision, opts.Limit)
	}
	end := clientv3.GetPrefixRangeEnd(start)
	from := start
	if opts.StartKey > prefix {
		if from, err = s.keys.toEtcd(opts.StartKey); err != nil {
			return storage.ListResult{}, err
		}
	}
	if err := s.acquire(); err != nil {
		return storage.ListResult{}, err
	}
	defer s.release()
	if from >= end {
		// A page start past the prefix: nothing to list, but the revision
		// (and its compacted/future errors) still answer as for any List.
		from, end = start, start
	}
	ops := []clientv3.OpOption{clientv3.WithRange(end)}
	if from == end {
		ops = []clientv3.OpOption{clientv3.WithCountOnly()}
	}
	if opts.Limit > 0 {
		ops = append(ops, clientv3.WithLimit(int64(opts.Limit)))
	}
	if opts.Revision > 0 {
		ops = append(ops, clientv3.WithRev(opts.Revision))
	}
	cctx, cancel := s.callContext(ctx)
	defer cancel()
	resp, err := s.client.Get(cctx, from, ops...)
	if err != nil {
		return storage.ListResult{}, s.fail(ctx, fmt.Sprintf("etcd: list %s at revision %d", prefix, opts.Revision), false, err)
	}
	res := storage.ListResult{
		KVs: make([]storage.KeyValue, 0, len(resp.Kvs)),
		// etcd's header has the newest revision even for an older read.
		Revision: resp.Header.Revision,
		More:     resp.More && from != end,
	}
	if opts.Revision > 0 {
		res.Revision = opts.Revision
	}
	for _, kv := range resp.Kvs {
		res.KVs = append(res.KVs, s.toKeyValue(kv))
	}
	return res, nil
}

// CurrentRevision implements storage.Interface: the header revision of a
// linearizable count of one key (the prefix itself, which holds nothing),
// which is the cluster's newest revision.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.release()
	cctx, cancel := s.callContext(ctx)
	defer cancel()
	resp, err := s.client.Get(cctx, s.keys.prefix, clientv3.WithCountOnly())
	if err != nil {
		return 0, s.fail(ctx, "etcd: current revision", false, err)
	}
	return resp.Header.Revision, nil
}

func (s *Store) toKeyValue(kv *mvccpb.KeyValue) storage.KeyValue {
	return storage.KeyValue{
		Key:            s.keys.fromEtcd(kv.Key),
		Value:          nonNil(kv.Value),
		ModRevision:    kv.ModRevision,
		CreateRevision: kv.CreateRevision,
	}
}

// nonNil keeps an empty value distinguishable from "no value": protobuf
// decodes an empty value as nil.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
