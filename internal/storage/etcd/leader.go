package etcd

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// DefaultLeaderCheckInterval is how often the driver checks that its
// connection still goes to the etcd leader (followLeader).
const DefaultLeaderCheckInterval = 10 * time.Second

// leaderMoveTimeout bounds moving the connection to a new leader.
const leaderMoveTimeout = 10 * time.Second

// followLeader keeps the connection on the etcd leader after leadership
// moves (the old leader died, or etcd moved it): every interval it asks
// the member it is connected to for its status, on the connection itself,
// and when that member is not the leader moves the connection to the
// leader's endpoint. A follower forwards every write to the leader: after
// a leader change, writes through one cost the extra hop (and the
// follower's CPU) until this check. It runs until Close.
func (s *Store) followLeader(interval time.Duration) {
	defer s.release()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.closing.Done():
			return
		case <-t.C:
		}
		if err := s.checkLeader(s.closing); err != nil && s.closing.Err() == nil {
			s.log.Warn("checking that requests go to the etcd leader", "err", err)
		}
	}
}

// checkLeader moves the connection to the leader if the member it is on
// is not the leader. A cluster without a leader, or a leader that is not
// among the configured endpoints, leaves it where it is.
func (s *Store) checkLeader(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	maint := pb.NewMaintenanceClient(s.client.ActiveConnection())
	st, err := maint.Status(ctx, &pb.StatusRequest{}, txnCallOptions...)
	if err != nil {
		if s.closing.Err() != nil {
			return fmt.Errorf("etcd status: %w", err)
		}
		if ferr := s.failOver(s.closing); ferr != nil {
			return fmt.Errorf("etcd status: %w; %w", err, ferr)
		}
		return nil
	}
	if st.Leader == 0 || st.Header == nil || st.Leader == st.Header.MemberId {
		return nil
	}
	cl, err := s.client.Cluster.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("etcd member list: %w", err)
	}
	var leaderURLs []string
	for _, m := range cl.Members {
		if m.ID == st.Leader {
			leaderURLs = m.ClientURLs
		}
	}
	eps := s.client.Endpoints()
	i := slices.IndexFunc(eps, func(ep string) bool {
		return slices.ContainsFunc(leaderURLs, func(u string) bool { return sameHost(ep, u) })
	})
	if i < 0 {
		return nil
	}
	return s.moveTo(eps, i, st.Leader)
}

// moveTo connects to eps[i], the endpoint of member (the leader, or for
// failOver a member that answers), and keeps the others after it for
// failover. pick_first keeps a ready connection whose address is still in
// a new list, wherever it is in it, so the list first holds that member
// alone and gets the others back once the connection is on it.
func (s *Store) moveTo(eps []string, i int, member uint64) error {
	ep := eps[i]
	ordered := append([]string{ep}, slices.Delete(slices.Clone(eps), i, i+1)...)
	s.client.SetEndpoints(ep)
	defer s.client.SetEndpoints(ordered...)
	ctx, cancel := context.WithTimeout(s.closing, leaderMoveTimeout)
	defer cancel()
	maint := pb.NewMaintenanceClient(s.client.ActiveConnection())
	for {
		st, err := maint.Status(ctx, &pb.StatusRequest{}, txnCallOptions...)
		if err == nil && st.Header != nil && st.Header.MemberId == member {
			s.log.Info("sending requests to another etcd member", "endpoint", ep, "leader", st.Leader == member)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("moving to the etcd member at %s: %w", ep, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sameHost reports whether two endpoint URLs name the same host and port
// ("http://127.0.0.1:2379", "127.0.0.1:2379").
func sameHost(a, b string) bool {
	return hostOf(a) == hostOf(b)
}

func hostOf(ep string) string {
	if u, err := url.Parse(ep); err == nil && u.Host != "" {
		return u.Host
	}
	return ep
}
