package etcd

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// keepaliveTime and keepaliveTimeout are kube-apiserver's for its etcd
// client (storagebackend/factory/etcd3.go): a ping after 30 s without
// traffic, and the connection closed when 10 s pass without its answer.
const (
	keepaliveTime    = 30 * time.Second
	keepaliveTimeout = 10 * time.Second
)

// maxReconnectDelay bounds the wait between two attempts to reconnect to
// the cluster.
const maxReconnectDelay = 2 * time.Second

// reconnect is gRPC's reconnect backoff (1 s, growing 1.6 times per
// failed attempt, 20% jitter) with its ceiling lowered from 120 s to
// maxReconnectDelay. clientv3 keeps gRPC's default, under which a replica
// cut off from etcd waits longer and longer between attempts: once the
// link was back it answered again 4.8 s later after a 10 s cut (the
// robustness suite's partition fault), and would after up to two minutes
// after a long one, serving 503s all the while. A TCP connection attempt
// every 2 s to an unreachable member costs nothing worth saving.
var reconnect = []grpc.DialOption{
	grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: backoff.DefaultConfig.BaseDelay, Multiplier: backoff.DefaultConfig.Multiplier, Jitter: backoff.DefaultConfig.Jitter, MaxDelay: maxReconnectDelay},
		MinConnectTimeout: 20 * time.Second, // gRPC's default
	}),
}
