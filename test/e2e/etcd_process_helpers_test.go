package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// raftLeader is the member of c that is raft leader now, as the members
// report it (every member it can reach must name the same one); it waits
// up to within for an elected leader.
func raftLeader(t *testing.T, c *testdeps.EtcdCluster, within time.Duration) *testdeps.EtcdMember {
	t.Helper()
	var leader *testdeps.EtcdMember
	if _, err := waitFor(within, func() (bool, error) {
		leader = nil
		ids := map[uint64]*testdeps.EtcdMember{}
		var leaderID uint64
		for _, m := range c.Members {
			id, lead, err := memberStatus(m.Endpoint)
			if err != nil {
				continue // a member that is down
			}
			ids[id] = m
			if leaderID != 0 && lead != leaderID {
				return false, fmt.Errorf("members disagree on the leader: %x and %x", leaderID, lead)
			}
			leaderID = lead
		}
		leader = ids[leaderID]
		return leader != nil, fmt.Errorf("leader %x is not among the members that answer", leaderID)
	}); err != nil {
		t.Fatalf("no etcd leader within %v: %v", within, err)
	}
	return leader
}

// memberStatus asks one member for its id and the leader it follows.
func memberStatus(endpoint string) (id, leader uint64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, 0, fmt.Errorf("etcd client for %s: %w", endpoint, err)
	}
	defer cli.Close()
	st, err := cli.Status(ctx, endpoint)
	if err != nil {
		return 0, 0, fmt.Errorf("status of %s: %w", endpoint, err)
	}
	return st.Header.MemberId, st.Leader, nil
}
