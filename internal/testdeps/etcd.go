package testdeps

import (
	"context"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdMemberIs reports whether the etcd member answering on the client URL
// client is the one whose peer URL is peer. Tests start etcd on ports a
// free-port probe found, and another process (another test's etcd, run in
// parallel) can take such a port before etcd binds it: that member then
// exits while the other process answers on its port, healthy. Its peer
// URL, advertised in the member list, tells them apart.
func EtcdMemberIs(client, peer string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
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
