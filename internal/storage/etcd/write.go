package etcd

import (
	"context"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/storage"
)

// Create implements storage.Interface with If(CreateRevision==0) Then(Put).
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	ek, err := s.keys.toEtcd(key)
	if err != nil {
		return 0, err
	}
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.release()
	cctx, cancel := s.callContext(ctx)
	defer cancel()
	k := []byte(ek)
	resp, err := s.txn(cctx, &pb.TxnRequest{
		Compare: []*pb.Compare{notCreated(k)},
		Success: []*pb.RequestOp{putOp(k, value)},
	})
	if err != nil {
		return 0, s.fail(ctx, "etcd: create "+key, true, err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("etcd: create %s: %w", key, storage.ErrKeyExists)
	}
	return resp.Header.Revision, nil
}

// Update implements storage.Interface with If(ModRevision==expected)
// Then(Put) Else(Get): the Else read says whether the key is missing or
// just changed.
func (s *Store) Update(ctx context.Context, key string, expectedRevision int64, value []byte) (int64, error) {
	ek, err := s.keys.toEtcd(key)
	if err != nil {
		return 0, err
	}
	return s.update(ctx, key, ek, expectedRevision, value)
}

// update is Update of key, whose etcd key is ek.
func (s *Store) update(ctx context.Context, key, ek string, expectedRevision int64, value []byte) (int64, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.release()
	if expectedRevision <= 0 {
		// etcd compares a missing key's ModRevision as 0, so this compare
		// would create the key; no existing key has revision <= 0 anyway.
		return 0, s.preconditionError(ctx, "update", key, ek)
	}
	cctx, cancel := s.callContext(ctx)
	defer cancel()
	resp, err := s.txn(cctx, newUpdateTxn([]byte(ek), value, expectedRevision))
	if err != nil {
		return 0, s.fail(ctx, "etcd: update "+key, true, err)
	}
	if !resp.Succeeded {
		return 0, failedPrecondition("update", key, expectedRevision, resp)
	}
	return resp.Header.Revision, nil
}

// Delete implements storage.Interface: a plain delete with the previous value
// when expectedRevision is 0, otherwise the same transaction shape as Update.
func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	ek, err := s.keys.toEtcd(key)
	if err != nil {
		return storage.KeyValue{}, 0, err
	}
	if err := s.acquire(); err != nil {
		return storage.KeyValue{}, 0, err
	}
	defer s.release()
	if expectedRevision < 0 {
		return storage.KeyValue{}, 0, s.preconditionError(ctx, "delete", key, ek)
	}
	k := []byte(ek)
	req := &pb.TxnRequest{Success: []*pb.RequestOp{deleteOp(k)}}
	if expectedRevision > 0 {
		req.Compare = []*pb.Compare{modRevisionIs(k, expectedRevision)}
		req.Failure = []*pb.RequestOp{countOp(k)}
	}
	cctx, cancel := s.callContext(ctx)
	defer cancel()
	resp, err := s.txn(cctx, req)
	if err != nil {
		return storage.KeyValue{}, 0, s.fail(ctx, "etcd: delete "+key, true, err)
	}
	if !resp.Succeeded {
		return storage.KeyValue{}, 0, failedPrecondition("delete", key, expectedRevision, resp)
	}
	prev := resp.Responses[0].GetResponseDeleteRange().GetPrevKvs()
	if len(prev) == 0 {
		// Nothing was deleted; etcd did not move the revision either.
		return storage.KeyValue{}, 0, fmt.Errorf("etcd: delete %s: %w", key, storage.ErrNotFound)
	}
	return s.toKeyValue(prev[0]), resp.Header.Revision, nil
}

// failedPrecondition turns the Else branch's count into ErrNotFound (the key
// is gone) or ErrConflict (it changed).
func failedPrecondition(op, key string, expected int64, resp *pb.TxnResponse) error {
	if resp.Responses[0].GetResponseRange().GetCount() == 0 {
		return fmt.Errorf("etcd: %s %s: %w", op, key, storage.ErrNotFound)
	}
	return fmt.Errorf("etcd: %s %s at revision %d: %w", op, key, expected, storage.ErrConflict)
}

// preconditionError answers a precondition no key can meet, telling a missing
// key from an existing one as the transactions do.
func (s *Store) preconditionError(ctx context.Context, op, key, ek string) error {
	cctx, cancel := s.callContext(ctx)
	defer cancel()
	resp, err := s.client.Get(cctx, ek, clientv3.WithCountOnly())
	if err != nil {
		return s.fail(ctx, "etcd: "+op+" "+key, false, err)
	}
	if resp.Count == 0 {
		return fmt.Errorf("etcd: %s %s: %w", op, key, storage.ErrNotFound)
	}
	return fmt.Errorf("etcd: %s %s: %w", op, key, storage.ErrConflict)
}
