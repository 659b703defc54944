package etcd

import (
	"context"
	"slices"

	"google.golang.org/grpc"
)

// pickFirst makes the client send every request to one member at a time,
// the first of its endpoints that answers, instead of etcd's default of
// spreading them round-robin over all members. A follower forwards every
// write to the leader (and asks it for a read index for every
// linearizable read), so spreading costs the cluster an extra hop and
// the CPU to make it for two requests in three, and the client one HTTP/2
// connection per member, each with fewer requests to batch into a write
// to its socket. gRPC moves on to the next endpoint when the member is
// lost, as round-robin leaves it out. The resolver of clientv3 asks for
// round_robin in its service config; ignoring that config is what lets
// the default (pick_first) apply.
var pickFirst = []grpc.DialOption{
	grpc.WithDisableServiceConfig(),
	grpc.WithDefaultServiceConfig(`{"loadBalancingPolicy":"pick_first"}`),
}

// preferLeader puts the endpoint of the current etcd leader first, so that
// pickFirst connects to it: requests then need no forwarding at all. It
// must run before the client's first request (the connection is made
// lazily, by that request). A member that does not answer is left where
// it is; with no answer at all the order stays as configured. A later
// leader change is followed by followLeader (leader.go).
func (s *Store) preferLeader(ctx context.Context) {
	eps := s.client.Endpoints()
	if len(eps) < 2 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	for i, ep := range eps {
		st, err := s.client.Status(cctx, ep)
		if err != nil || st.Header == nil || st.Leader != st.Header.MemberId {
			continue
		}
		if i > 0 {
			ordered := append([]string{ep}, slices.Delete(slices.Clone(eps), i, i+1)...)
			s.client.SetEndpoints(ordered...)
		}
		s.log.Info("sending requests to the etcd leader first", "endpoint", ep)
		return
	}
}
