package etcd

import (
	"context"
	"math"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// The write transactions are built as etcd's wire messages and sent
// through clientv3.RetryKVClient, the KV client clientv3.Txn itself ends
// in, with the same call options clientv3 gives it: the same retries
// (none for a transaction etcd may have received), the same interceptors
// (version, auth) and the same error conversion. clientv3's Txn builder
// clones every comparison with proto.Clone, which goes through protobuf
// reflection, copies the value twice (through a string) and takes a
// mutex per step: the clones alone were 2% of a replica's CPU profile
// under bench max on 3 etcd members (scripts/etcd-ratio.sh), for an If
// of one comparison; like the watch cache's hand-off of the writer's
// object, it is smaller than the round-to-round spread of the replica's
// CPU per renewal on the shared machine it was measured on.

// maxCallSendMsgSize and maxCallRecvMsgSize are clientv3's defaults, set
// in the client's Config and used for the transactions sent here, so the
// two paths have the same limits.
const (
	maxCallSendMsgSize = 2 * 1024 * 1024
	maxCallRecvMsgSize = math.MaxInt32
)

// txnCallOptions are the call options clientv3 uses for its requests
// (clientv3's defaultCallOpts with the sizes above): WaitForReady makes a
// request wait for a lost connection to come back until its deadline,
// instead of failing at once.
var txnCallOptions = []grpc.CallOption{
	grpc.WaitForReady(true),
	grpc.MaxCallSendMsgSize(maxCallSendMsgSize),
	grpc.MaxCallRecvMsgSize(maxCallRecvMsgSize),
}

// txn sends one transaction and converts its error as clientv3 does.
func (s *Store) txn(ctx context.Context, req *pb.TxnRequest) (*pb.TxnResponse, error) {
	resp, err := s.kv.Txn(ctx, req, txnCallOptions...)
	if err != nil {
		return nil, clientv3.ContextError(ctx, err)
	}
	return resp, nil
}

// updateTxn is Update's transaction, If(ModRevision==expected) Then(Put)
// Else(count), with every message and slice it points to in one
// allocation instead of twelve. With keyMap.toEtcd's verbatim key,
// BenchmarkReplicaWrite went from 147 to 135 allocations and from 81-86
// to 76-82 CPU-µs per renewal (4 alternating runs each, load 7-13): less
// than the replica's round-to-round spread under bench max.
type updateTxn struct {
	req      pb.TxnRequest
	cmps     [1]*pb.Compare
	cmp      pb.Compare
	modRev   pb.Compare_ModRevision
	success  [1]*pb.RequestOp
	putOp    pb.RequestOp
	putUnion pb.RequestOp_RequestPut
	put      pb.PutRequest
	failure  [1]*pb.RequestOp
	rangeOp  pb.RequestOp
	rngUnion pb.RequestOp_RequestRange
	rng      pb.RangeRequest
}

// newUpdateTxn builds the transaction that puts value at key if its
// ModRevision is rev, and else counts key.
func newUpdateTxn(key, value []byte, rev int64) *pb.TxnRequest {
	t := new(updateTxn)
	t.modRev.ModRevision = rev
	t.cmp.Key, t.cmp.Target, t.cmp.Result, t.cmp.TargetUnion = key, pb.Compare_MOD, pb.Compare_EQUAL, &t.modRev
	t.cmps[0] = &t.cmp
	t.put.Key, t.put.Value = key, value
	t.putUnion.RequestPut = &t.put
	t.putOp.Request = &t.putUnion
	t.success[0] = &t.putOp
	t.rng.Key, t.rng.CountOnly = key, true
	t.rngUnion.RequestRange = &t.rng
	t.rangeOp.Request = &t.rngUnion
	t.failure[0] = &t.rangeOp
	t.req.Compare, t.req.Success, t.req.Failure = t.cmps[:], t.success[:], t.failure[:]
	return &t.req
}

// modRevisionIs compares key's ModRevision with rev (a missing key's is 0).
func modRevisionIs(key []byte, rev int64) *pb.Compare {
	return &pb.Compare{
		Key:         key,
		Target:      pb.Compare_MOD,
		Result:      pb.Compare_EQUAL,
		TargetUnion: &pb.Compare_ModRevision{ModRevision: rev},
	}
}

// notCreated holds while key does not exist (its CreateRevision is 0).
func notCreated(key []byte) *pb.Compare {
	return &pb.Compare{
		Key:         key,
		Target:      pb.Compare_CREATE,
		Result:      pb.Compare_EQUAL,
		TargetUnion: &pb.Compare_CreateRevision{CreateRevision: 0},
	}
}

func putOp(key, value []byte) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: key, Value: value}}}
}

// countOp counts key (0 or 1): the Else branch that tells a missing key
// from a changed one.
func countOp(key []byte) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: key, CountOnly: true}}}
}

func deleteOp(key []byte) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: key, PrevKv: true}}}
}
