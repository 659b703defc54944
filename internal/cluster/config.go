package cluster

import (
	"fmt"
	"log/slog"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Config is what serve's flags say about the cluster.
type Config struct {
	// AuthenticationKubeconfig is --authentication-kubeconfig: the cluster
	// that reviews tokens and publishes the front-proxy settings. Setting it
	// is what puts serve in cluster mode.
	AuthenticationKubeconfig string
	// AuthorizationKubeconfig is --authorization-kubeconfig: the cluster
	// whose RBAC objects are watched and which answers
	// SubjectAccessReviews (AuthenticationKubeconfig's when empty).
	AuthorizationKubeconfig string
	// ClientCAFile is --client-ca-file: when set it replaces the
	// ConfigMap's client-ca-file.
	ClientCAFile string
	// RequestHeader replaces the ConfigMap's request-header settings when
	// its ClientCAFile is set (--requestheader-* flags).
	RequestHeader RequestHeaderConfig
	Logger        *slog.Logger
}

// RequestHeaderConfig is kube's --requestheader-* flags.
type RequestHeaderConfig struct {
	ClientCAFile        string
	AllowedNames        []string
	UsernameHeaders     []string
	UIDHeaders          []string
	GroupHeaders        []string
	ExtraHeaderPrefixes []string
}

// Enabled reports whether serve runs behind a cluster.
func (c Config) Enabled() bool { return c.AuthenticationKubeconfig != "" }

// clients builds the two clients; the same kubeconfig gives one client.
func (c Config) clients() (authn, authz kubernetes.Interface, err error) {
	authn, err = clientFor(c.AuthenticationKubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--authentication-kubeconfig: %w", err)
	}
	if c.AuthorizationKubeconfig == "" || c.AuthorizationKubeconfig == c.AuthenticationKubeconfig {
		return authn, authn, nil
	}
	authz, err = clientFor(c.AuthorizationKubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--authorization-kubeconfig: %w", err)
	}
	return authn, authz, nil
}

func clientFor(kubeconfig string) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", kubeconfig, err)
	}
	// Informers' lists and reviews: kube's delegating clients use protobuf
	// too, and the cluster's RBAC objects are the largest list read here.
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.UserAgent = "leasehold"
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", kubeconfig, err)
	}
	return c, nil
}
