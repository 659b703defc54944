package testdeps

import (
	"context"
	"net/http"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdMemberServes reports whether the etcd member on the client URL
// client is up (its /health answers 200; a member answers 503 while the
// cluster has no leader) and is the one whose peer URL is peer. Tests start
// etcd on ports a free-port probe found, and another process (another
// test's etcd, run in parallel) can take such a port before etcd binds it:
// that member then exits while the other process answers on its port,
// healthy. Its peer URL, advertised in the member list, tells them apart.
func EtcdMemberServes(client, peer string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, client+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK && etcdMemberIs(ctx, client, peer)
}

// etcdMemberIs reports whether the member answering on client advertises
// peer as its peer URL.
func etcdMemberIs(ctx context.Context, client, peer string) bool {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return false
	}
	defer func() { _ = cli.Close() }()
	st, err := cli.Status(ctx, client)
	if err != nil {
		return false
	}
	members, err := cli.MemberList(ctx)
	if err != nil {
		return false
	}
	for _, m := range members.Members {
		if m.ID == st.Header.MemberId {
			return slices.Contains(m.PeerURLs, peer)
		}
	}
	return false
}
