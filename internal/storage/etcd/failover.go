package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// errNoMemberAnswers is failOver's answer when no endpoint answered.
var errNoMemberAnswers = errors.New("no etcd endpoint answered")

// failOver moves the connection off a member that stopped answering while
// its connection stays up: a member behind a network that drops packets
// instead of refusing them (a partition, a hung host). gRPC only moves on
// when a connection fails, and a silent one fails when TCP gives up, many
// minutes later (keepalive, set in New, shortens that to about 40 s); until
// then every request runs into CallTimeout and the replica answers 503.
// followLeader calls it when the member it is on does not answer a status
// request: it asks every endpoint at once, and moves to the leader among
// those that answer, or else to the first that answers. A member that
// answers but has lost quorum still answers a status request (it is
// served locally), so losing quorum moves nothing; when no endpoint
// answers, nothing moves either.
func (s *Store) failOver(ctx context.Context) error {
	eps := s.client.Endpoints()
	if len(eps) < 2 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	answers := make([]*clientv3.StatusResponse, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() {
			if st, err := s.client.Status(ctx, ep); err == nil && st.Header != nil {
				answers[i] = st
			}
		})
	}
	wg.Wait()
	pick := -1
	for i, st := range answers {
		if st == nil {
			continue
		}
		if pick < 0 || st.Leader == st.Header.MemberId {
			pick = i
		}
		if st.Leader == st.Header.MemberId {
			break
		}
	}
	if pick < 0 {
		return errNoMemberAnswers
	}
	if err := s.moveTo(eps, pick, answers[pick].Header.MemberId); err != nil {
		return fmt.Errorf("failing over from a silent etcd member: %w", err)
	}
	return nil
}
