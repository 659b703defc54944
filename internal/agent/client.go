package agent

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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

// Clients are the two clientsets an agent needs, plus the hook that drops
// the heartbeat client's idle connections.
type Clients struct {
	Client    kubernetes.Interface
	Heartbeat kubernetes.Interface
	// CloseIdleHeartbeatConnections is meant for
	// Config.OnRepeatedHeartbeatFailure: after repeated failures the pooled
	// (HTTP/2) connection is likely dead, and closing it makes the next
	// request dial afresh instead of waiting for the ping timeout.
	CloseIdleHeartbeatConnections func()
}

// NewClients builds the main and heartbeat clientsets from base. client-go
// may share one transport between them (its TLS transport cache); closing idle
// connections then also drops the main client's idle ones, which costs it at
// most a new dial and never fails a request in flight.
func NewClients(base *rest.Config, cfg Config) (Clients, error) {
	client, err := kubernetes.NewForConfig(base)
	if err != nil {
		return Clients{}, fmt.Errorf("build API client: %w", err)
	}
	hbConfig := HeartbeatRESTConfig(base, cfg)
	httpClient, err := rest.HTTPClientFor(hbConfig)
	if err != nil {
		return Clients{}, fmt.Errorf("build heartbeat HTTP client: %w", err)
	}
	heartbeat, err := kubernetes.NewForConfigAndClient(hbConfig, httpClient)
	if err != nil {
		return Clients{}, fmt.Errorf("build heartbeat client: %w", err)
	}
	return Clients{
		Client:                        client,
		Heartbeat:                     heartbeat,
		CloseIdleHeartbeatConnections: closeIdle(httpClient),
	}, nil
}

func closeIdle(c *http.Client) func() { return c.CloseIdleConnections }

// UseProtobuf sets c to send protobuf and accept protobuf or JSON, as
// kubelets do (--kube-api-content-type).
func UseProtobuf(c *rest.Config) {
	c.ContentType = ProtobufContentType
	c.AcceptContentTypes = protobufAccept
}
