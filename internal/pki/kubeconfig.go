package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Names used in the kubeconfigs this package writes.
const (
	// KubeconfigClusterName names both the cluster and the context.
	KubeconfigClusterName = "leasehold"
	// AdminKubeconfigFile is the admin kubeconfig's name in the data directory.
	AdminKubeconfigFile = "admin.kubeconfig"
	// AdminUser and AdminGroup are the identity of the admin kubeconfig;
	// system:masters is the RBAC superuser group.
	AdminUser  = "leasehold-admin"
	AdminGroup = "system:masters"
)

// WriteKubeconfig writes, atomically and with mode 0600 (it holds a private
// key), the kubeconfig EncodeKubeconfig returns.
func WriteKubeconfig(path, serverURL string, caPEM, certPEM, keyPEM []byte, user string) error {
	data, err := EncodeKubeconfig(serverURL, caPEM, certPEM, keyPEM, user)
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(path, data, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// EncodeKubeconfig returns a kubeconfig with one cluster and one context
// named "leasehold" (current) and one user named user, all credentials
// embedded as data so the file works wherever it is copied.
func EncodeKubeconfig(serverURL string, caPEM, certPEM, keyPEM []byte, user string) ([]byte, error) {
	if user == "" {
		return nil, errors.New("write kubeconfig: user name is empty")
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigClusterName] = &clientcmdapi.Cluster{
		Server:                   serverURL,
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM,
		ClientKeyData:         keyPEM,
	}
	cfg.Contexts[KubeconfigClusterName] = &clientcmdapi.Context{
		Cluster:  KubeconfigClusterName,
		AuthInfo: user,
	}
	cfg.CurrentContext = KubeconfigClusterName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig for %q: %w", user, err)
	}
	return data, nil
}

// EnsureAdminKubeconfig returns the path of dir/admin.kubeconfig for user
// leasehold-admin in group system:masters, pointing at serverURL. The file
// is rewritten (with a fresh certificate) unless it already points at
// serverURL, embeds this CA and holds a matching key and certificate for the
// admin identity that is valid for more than RenewBefore. Port 0 gives a new
// URL on every start, so rewriting on a URL change keeps the file usable.
func (ca *CA) EnsureAdminKubeconfig(dir, serverURL string) (path string, err error) {
	path = filepath.Join(dir, AdminKubeconfigFile)
	if ca.adminKubeconfigReusable(path, serverURL) {
		if err := restrictKeyMode(path); err != nil {
			return "", err
		}
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create pki directory %s: %w", dir, err)
	}
	certPEM, keyPEM, err := ca.IssueClientCert(AdminUser, []string{AdminGroup}, LeafValidity)
	if err != nil {
		return "", fmt.Errorf("admin kubeconfig: %w", err)
	}
	if err := WriteKubeconfig(path, serverURL, ca.certPEM, certPEM, keyPEM, AdminUser); err != nil {
		return "", fmt.Errorf("admin kubeconfig: %w", err)
	}
	return path, nil
}

// adminKubeconfigReusable reports whether the admin kubeconfig on disk is
// still correct. Any problem means "rewrite"; the file is ours.
func (ca *CA) adminKubeconfigReusable(path, serverURL string) bool {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return false
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil || kctx.AuthInfo != AdminUser {
		return false
	}
	cluster := cfg.Clusters[kctx.Cluster]
	auth := cfg.AuthInfos[kctx.AuthInfo]
	if cluster == nil || auth == nil {
		return false
	}
	if cluster.Server != serverURL || !bytes.Equal(cluster.CertificateAuthorityData, ca.certPEM) {
		return false
	}
	if _, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData); err != nil {
		return false
	}
	cert, err := parseCertPEM(auth.ClientCertificateData)
	if err != nil {
		return false
	}
	if err := ca.verifyLeaf(cert, x509.ExtKeyUsageClientAuth); err != nil {
		return false
	}
	name, groups := UserFromCert(cert)
	return name == AdminUser && slices.Contains(groups, AdminGroup)
}
