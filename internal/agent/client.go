package agent

import (
	"fmt"
	"net"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
)

// ProtobufContentType is what kubelets speak to the API server; JSON stays
// acceptable in answers so that servers without protobuf still work.
const (
	ProtobufContentType = "application/vnd.kubernetes.protobuf"
	protobufAccept      = ProtobufContentType + ",application/json"
)

// HeartbeatRESTConfig derives the heartbeat client's configuration from
// base, as the kubelet does: never throttled client-side (QPS -1) and each
// request bounded by cfg.HeartbeatTimeout(), so a hung connection cannot
// delay the next heartbeat.
func HeartbeatRESTConfig(base *rest.Config, cfg Config) *rest.Config {
	hb := rest.CopyConfig(base)
	hb.QPS = -1
	hb.Burst = 0
	hb.RateLimiter = nil
	hb.Timeout = cfg.HeartbeatTimeout()
	return hb
}

// Clients are the two clientsets an agent needs. Each dials through its own
// connection tracker, so its connections can be closed without touching
// the other's.
type Clients struct {
	Client    kubernetes.Interface
	Heartbeat kubernetes.Interface

	clientConns    *connrotation.Dialer
	heartbeatConns *connrotation.Dialer
}

// NewClients builds the main and heartbeat clientsets from base (base
// must not set Dial: the clients need their own dialers).
func NewClients(base *rest.Config, cfg Config) (Clients, error) {
	if base.Dial != nil {
		return Clients{}, fmt.Errorf("build agent clients: the REST config must not set Dial")
	}
	netDialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	c := Clients{
		clientConns:    connrotation.NewDialer(netDialer.DialContext),
		heartbeatConns: connrotation.NewDialer(netDialer.DialContext),
	}
	mainConfig := rest.CopyConfig(base)
	mainConfig.Dial = c.clientConns.DialContext
	client, err := kubernetes.NewForConfig(mainConfig)
	if err != nil {
		return Clients{}, fmt.Errorf("build API client: %w", err)
	}
	hbConfig := HeartbeatRESTConfig(base, cfg)
	hbConfig.Dial = c.heartbeatConns.DialContext
	heartbeat, err := kubernetes.NewForConfig(hbConfig)
	if err != nil {
		return Clients{}, fmt.Errorf("build heartbeat client: %w", err)
	}
	c.Client, c.Heartbeat = client, heartbeat
	return c, nil
}

// CloseHeartbeatConnections closes every connection of the heartbeat
// client; it is meant for Config.OnRepeatedHeartbeatFailure. After repeated
// failures the pooled HTTP/2 connection is likely dead (a silently dropped
// TCP connection is otherwise reused until the ping timeout), and the
// kubelet's remedy is the same: the next heartbeat dials afresh. Closing
// only idle connections is not enough, because net/http does not close the
// pooled HTTP/2 connections that client-go's transport keeps.
func (c Clients) CloseHeartbeatConnections() { c.heartbeatConns.CloseAll() }

// Close closes every connection of both clients, ending the goroutines that
// serve them. Call it after the agents using the clients have stopped.
func (c Clients) Close() {
	c.clientConns.CloseAll()
	c.heartbeatConns.CloseAll()
}

// UseProtobuf sets c to send protobuf and accept protobuf or JSON, as
// kubelets do (--kube-api-content-type).
func UseProtobuf(c *rest.Config) {
	c.ContentType = ProtobufContentType
	c.AcceptContentTypes = protobufAccept
}
